// etcd client endpoints from --rdzv-endpoint: "host[:port][,host[:port]...]", default port 2379,
// each optionally written as a URL (http://host:port), IPv6 literals in brackets. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::etcd {

inline constexpr std::uint16_t kDefaultPort = 2379;

struct Endpoint {
  std::string host;  // without brackets
  std::uint16_t port = kDefaultPort;
  std::string to_string() const;  // host:port ([v6]:port)
  bool operator==(const Endpoint&) const = default;
};

// kInvalidArgument naming the bad entry: empty list or entry, bad port, a scheme other than
// http/https (the scheme itself is ignored: --rdzv-conf protocol decides).
Result<std::vector<Endpoint>> parse_endpoints(std::string_view text);
// "h1:2379, h2:2379" for messages.
std::string join_endpoints(const std::vector<Endpoint>& endpoints);

}  // namespace ddp::etcd
