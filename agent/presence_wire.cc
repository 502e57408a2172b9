#include "agent/presence_wire.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace ddp::agent {
namespace {

constexpr std::string_view kMagic = "ddprun-presence";

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

std::string encode_claim(const CoordinatorClaim& claim) {
  if (!claim.presence) return claim.node_key;
  return claim.node_key + "\n" + claim.presence->to_string();
}

CoordinatorClaim decode_claim(std::string_view value) {
  auto nl = value.find('\n');
  CoordinatorClaim claim{std::string(value.substr(0, nl)), std::nullopt};
  if (nl == std::string_view::npos) return claim;
  auto endpoints = etcd::parse_endpoints(value.substr(nl + 1));
  if (endpoints && endpoints->size() == 1) claim.presence = endpoints->front();
  return claim;
}

std::string encode_hello(const PresenceHello& hello) {
  return std::string(kMagic) + "\n" + hello.run_id + "\n" + hello.node_key + "\n" +
         std::to_string(hello.lease) + "\n" + hello.token + std::string(kHelloEnd);
}

Result<PresenceHello> decode_hello(std::string_view text) {
  if (text.size() < kHelloEnd.size() || !text.ends_with(kHelloEnd)) {
    return protocol_error("presence hello without its end mark");
  }
  text.remove_suffix(kHelloEnd.size());
  auto parts = lines(text);
  if (parts.size() != 5 || parts[0] != kMagic) {
    return protocol_error(
        "not a ddprun presence hello (expected the magic, run id, node key, lease and token)");
  }
  PresenceHello hello{std::string(parts[1]), std::string(parts[2]), 0, std::string(parts[4])};
  auto [end, ec] = std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), hello.lease);
  if (ec != std::errc() || end != parts[3].data() + parts[3].size() || hello.lease <= 0) {
    return protocol_error("presence hello with a bad lease id '" + std::string(parts[3]) + "'");
  }
  if (hello.token.size() < kMinTokenDigits || !std::ranges::all_of(hello.token, is_hex)) {
    return protocol_error("presence hello of node " + hello.node_key + " with a bad token (" +
                          std::to_string(kMinTokenDigits) + " or more hex digits expected)");
  }
  return hello;
}

bool same_token(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  // Every byte is compared, with no branch on the data: no early exit at the first difference.
  volatile unsigned char diff = 0;  // volatile: kept as written, not turned into a memcmp
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

bool token_mismatch(const PresenceHello& hello, const PresenceRecord& record) {
  return record.token && !same_token(*record.token, hello.token);
}

bool revokes_on_close(const PresenceHello& hello, const PresenceRecord& record) {
  return record.token && same_token(*record.token, hello.token) && record.node_lease == hello.lease;
}

}  // namespace ddp::agent
