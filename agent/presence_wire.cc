#include "agent/presence_wire.h"

#include <charconv>
#include <vector>

namespace ddp::agent {
namespace {

constexpr std::string_view kMagic = "ddprun-presence";

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
         std::to_string(hello.lease) + std::string(kHelloEnd);
}

Result<PresenceHello> decode_hello(std::string_view text) {
  if (text.size() < kHelloEnd.size() || !text.ends_with(kHelloEnd)) {
    return protocol_error("presence hello without its end mark");
  }
  text.remove_suffix(kHelloEnd.size());
  auto parts = lines(text);
  if (parts.size() != 4 || parts[0] != kMagic) {
    return protocol_error("not a ddprun presence hello (expected 4 lines after the magic)");
  }
  PresenceHello hello{std::string(parts[1]), std::string(parts[2]), 0};
  auto [end, ec] = std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), hello.lease);
  if (ec != std::errc() || end != parts[3].data() + parts[3].size() || hello.lease <= 0) {
    return protocol_error("presence hello with a bad lease id '" + std::string(parts[3]) + "'");
  }
  return hello;
}

}  // namespace ddp::agent
