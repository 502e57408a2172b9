#include "rendezvous/connection_limits.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

namespace ddp::rendezvous {

std::size_t reserved_descriptors(std::uint64_t nofile) {
  return static_cast<std::size_t>(std::max<std::uint64_t>(64, nofile / 8));
}

Result<ConnectionCaps> resolve_caps(const ConnectionLimits& limits, std::uint64_t nofile) {
  const std::size_t reserve = reserved_descriptors(nofile);
  const std::string limit_text = "the open-file limit (" + std::to_string(nofile) + ", minus " +
                                 std::to_string(reserve) + " kept for other files)";
  // A limit too small for the reserve (a process started under `ulimit -n 64`) still serves,
  // with half of it.
  const std::size_t room = nofile > reserve ? static_cast<std::size_t>(nofile) - reserve
                                            : std::max<std::size_t>(1, nofile / 2);
  ConnectionCaps caps;
  caps.max_connections = limits.max_connections != 0 ? limits.max_connections : room;
  if (caps.max_connections > room) {
    return invalid_argument("--max-connections " + std::to_string(caps.max_connections) +
                            " exceeds " + limit_text + "; raise ulimit -n or pass at most " +
                            std::to_string(room));
  }
  // Other peers keep half of the slots, or 1024 of them when that is less: a single-host run
  // (thousands of workers on 127.0.0.1) still fits under a large limit.
  const std::size_t kept_for_others = std::min<std::size_t>(caps.max_connections / 2, 1024);
  caps.max_per_peer = limits.max_per_peer != 0
                          ? limits.max_per_peer
                          : std::max<std::size_t>(1, caps.max_connections - kept_for_others);
  if (caps.max_per_peer > caps.max_connections) {
    return invalid_argument("--max-connections-per-peer " + std::to_string(caps.max_per_peer) +
                            " exceeds --max-connections " + std::to_string(caps.max_connections) +
                            "; pass at most that");
  }
  return caps;
}

Result<ConnectionLimits> connection_limits_from_flags(const ConnectionFlags& flags) {
  ConnectionLimits limits;
  const double t = flags.first_request_timeout_s;
  if (!std::isfinite(t) || t < 0 || t > 86400) {
    return invalid_argument("--first-request-timeout " + fmt::format("{:g}", t) +
                            " is not a number of seconds from 0 (off) to 86400; pass e.g. 10");
  }
  limits.first_request_timeout = std::chrono::milliseconds(std::llround(t * 1000));
  if (t > 0 && limits.first_request_timeout.count() == 0) {
    limits.first_request_timeout = std::chrono::milliseconds(1);
  }
  limits.max_connections = flags.max_connections;
  limits.max_per_peer = flags.max_per_peer;
  if (flags.max_connections != 0 && flags.max_per_peer > flags.max_connections) {
    return invalid_argument("--max-connections-per-peer " + std::to_string(flags.max_per_peer) +
                            " exceeds --max-connections " + std::to_string(flags.max_connections) +
                            "; pass at most that");
  }
  if (!flags.store_allow.empty()) {
    auto networks = parse_store_allow(flags.store_allow);
    if (!networks) return networks.status();
    limits.store_allow = std::move(networks).value();
  }
  return limits;
}

std::uint64_t open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::uint64_t{1} << 20;
  }
  return limit.rlim_cur;
}

}  // namespace ddp::rendezvous
