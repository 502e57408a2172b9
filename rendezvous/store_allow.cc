#include "rendezvous/store_allow.h"

#include <algorithm>

#include "common/text.h"
#include "rendezvous/admission.h"

namespace ddp::rendezvous {
namespace {

namespace ip = boost::asio::ip;

Status bad(std::string_view text, std::string_view problem) {
  return invalid_argument("--store-allow: '" + std::string(text) + "' " + std::string(problem) +
                          "; use ADDRESS/PREFIX (10.0.0.0/8, fd00::/8; a prefix of 0..32 for "
                          "IPv4, 0..128 for IPv6), an address, or loopback");
}

// Adds one entry that is not "loopback".
template <typename Network>
Status add(std::vector<Network>& to, std::string_view entry, const Network& network) {
  if (network != network.canonical()) {
    return bad(entry, "has address bits set below its /" + std::to_string(network.prefix_length()) +
                          " prefix (write the network's first address, or the host alone)");
  }
  to.push_back(network);
  return Status::ok();
}

Status add_entry(StoreAllow& allow, std::string_view entry) {
  if (entry == "loopback") {
    allow.v4.push_back(ip::make_network_v4("127.0.0.0/8"));
    allow.v6.push_back(ip::make_network_v6("::1/128"));
    return Status::ok();
  }
  std::string text(entry);
  boost::system::error_code ec;
  if (text.find('/') == std::string::npos) {  // one host
    const ip::address host = normalize_peer(ip::make_address(text, ec));
    if (!ec) text = host.to_string() + (host.is_v4() ? "/32" : "/128");
  }
  if (const ip::network_v4 v4 = ip::make_network_v4(text, ec); !ec) return add(allow.v4, entry, v4);
  if (const ip::network_v6 v6 = ip::make_network_v6(text, ec); !ec) {
    // Peers are matched as IPv4 then (a dual-stack listener's IPv4 clients): never as this.
    if (v6.address().is_v4_mapped()) return bad(entry, "is an IPv4-mapped network");
    return add(allow.v6, entry, v6);
  }
  return bad(entry, "is not an IP address or network");
}

}  // namespace

bool StoreAllow::contains(const ip::address& address) const {
  const ip::address peer = normalize_peer(address);
  if (peer.is_v4()) {
    return std::ranges::any_of(v4, [&](const ip::network_v4& n) {
      return ip::network_v4(peer.to_v4(), n.prefix_length()).canonical() == n;
    });
  }
  return std::ranges::any_of(v6, [&](const ip::network_v6& n) {
    return ip::network_v6(peer.to_v6(), n.prefix_length()).canonical() == n;
  });
}

std::string StoreAllow::to_string() const {
  std::string out;
  auto append = [&](const std::string& network) { out += (out.empty() ? "" : ",") + network; };
  for (const auto& n : v4) append(n.to_string());
  for (const auto& n : v6) append(n.to_string());
  return out;
}

Result<StoreAllow> parse_store_allow(std::string_view text) {
  StoreAllow allow;
  if (text.empty()) return bad(text, "is empty");
  for (std::string_view entry : split(text, ',')) {
    if (entry.empty()) return bad(text, "has an empty entry");
    if (Status added = add_entry(allow, entry); !added) return added;
  }
  return allow;
}

}  // namespace ddp::rendezvous
