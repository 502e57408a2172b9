// What a multi-node agent takes from --rdzv-endpoint, --rdzv-conf and --nnodes: where the
// rendezvous daemon is, whether this agent hosts it (torchrun's is_host), and the membership
// Config every node sends with its JOIN. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/config.h"
#include "common/status.h"
#include "rendezvous/membership/config.h"

namespace ddp::agent {

struct RdzvSettings {
  std::string host;             // the daemon's host (brackets of an IPv6 literal removed)
  std::uint16_t port = 29400;   // torchrun's default c10d port when none is given
  std::optional<bool> is_host;  // --rdzv-conf is_host=...; unset = infer (port bindable)
  membership::Config config;    // nodes, restarts, timeouts, keep-alive
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};  // read_timeout
};

// Errors (kInvalidArgument, naming the option and the fix): no --rdzv-endpoint, a bad port,
// an unknown --rdzv-conf key, a value that is not a number of seconds.
Result<RdzvSettings> rdzv_settings(const AgentConfig& config);

}  // namespace ddp::agent
