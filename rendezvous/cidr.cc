#include "rendezvous/cidr.h"

#include <array>
#include <charconv>

#include "rendezvous/admission.h"

namespace ddp::rendezvous {
namespace {

namespace ip = boost::asio::ip;

constexpr std::string_view kForm =
    "use ADDRESS/PREFIX (10.0.0.0/8, fd00::/8), an address, or loopback";

Status bad(std::string_view text, std::string_view problem) {
  return invalid_argument("--store-allow: '" + std::string(text) + "' " + std::string(problem) +
                          "; " + std::string(kForm));
}

// The address's bytes, network order (4 for IPv4, 16 for IPv6).
std::vector<unsigned char> bytes_of(const ip::address& a) {
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    return {b.begin(), b.end()};
  }
  auto b = a.to_v6().to_bytes();
  return {b.begin(), b.end()};
}

// True when the first `prefix` bits of a and b agree (same length).
bool same_prefix(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b,
                 unsigned prefix) {
  const unsigned whole = prefix / 8;
  for (unsigned i = 0; i < whole; ++i) {
    if (a[i] != b[i]) return false;
  }
  const unsigned rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<unsigned char>(0xFF << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

bool host_bits_clear(const std::vector<unsigned char>& a, unsigned prefix) {
  for (unsigned bit = prefix; bit < a.size() * 8; ++bit) {
    if (a[bit / 8] & (0x80 >> (bit % 8))) return false;
  }
  return true;
}

}  // namespace

bool Cidr::contains(const ip::address& address) const {
  const ip::address a = normalize_peer(address);
  if (a.is_v4() != network.is_v4()) return false;
  return same_prefix(bytes_of(a), bytes_of(network), prefix);
}

std::string Cidr::to_string() const { return network.to_string() + "/" + std::to_string(prefix); }

Result<Cidr> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  const std::string_view addr_text = text.substr(0, slash);
  boost::system::error_code ec;
  ip::address address = ip::make_address(std::string(addr_text), ec);
  if (ec) return bad(text, "is not an IP address or network");
  address = normalize_peer(address);
  const unsigned width = address.is_v4() ? 32 : 128;
  unsigned prefix = width;
  if (slash != std::string_view::npos) {
    const std::string_view len = text.substr(slash + 1);
    auto [end, err] = std::from_chars(len.data(), len.data() + len.size(), prefix);
    if (len.empty() || err != std::errc() || end != len.data() + len.size()) {
      return bad(text, "has no valid prefix length after '/'");
    }
    if (prefix > width) {
      return bad(text, "has a prefix length above " + std::to_string(width));
    }
  }
  if (!host_bits_clear(bytes_of(address), prefix)) {
    return bad(text, "has address bits set below its /" + std::to_string(prefix) +
                         " prefix (write the network's first address, or the host alone)");
  }
  return Cidr{address, prefix};
}

Result<std::vector<Cidr>> parse_cidr_list(std::string_view text) {
  std::vector<Cidr> out;
  if (text.empty()) return bad(text, "is empty");
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma - start);
    if (item.empty()) return bad(text, "has an empty entry");
    if (item == "loopback") {
      out.push_back(Cidr{ip::make_address("127.0.0.0"), 8});
      out.push_back(Cidr{ip::make_address("::1"), 128});
    } else {
      auto cidr = parse_cidr(item);
      if (!cidr) return cidr.status();
      out.push_back(*cidr);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool any_contains(const std::vector<Cidr>& networks, const ip::address& address) {
  for (const Cidr& n : networks) {
    if (n.contains(address)) return true;
  }
  return false;
}

}  // namespace ddp::rendezvous
