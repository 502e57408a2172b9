// `ddprun status HOST[:PORT] [RUN_ID] [--json]`: asks a rendezvous daemon's status port
// (--status-port; docs/status.md) for its jobs and prints them as a table, or the raw JSON.
//
// Exit codes: 0 printed; 1 the status port could not be reached or answered something else than
// the JSON it serves; 2 bad arguments; 3 RUN_ID unknown to the daemon (404). Errors are one line
// on `err`, "ddprun status: error: ...".
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::launcher {

inline constexpr std::uint16_t kDefaultStatusPort = 29401;

struct StatusArgs {
  std::string host;
  std::uint16_t port = kDefaultStatusPort;
  std::optional<std::string> run_id;
  bool json = false;
};

// `args` are those after "status". kInvalidArgument naming the fix; "--help" gives kCancelled
// with the usage text as the message.
Result<StatusArgs> parse_status_args(const std::vector<std::string>& args);

// The table of /api/jobs (every job, one line each) or of /api/jobs/<id> (the job, then one
// line per node). kProtocol when `json_text` is not what the status port serves.
Result<std::string> format_status_table(const std::string& json_text);

// Runs the whole command; returns the exit code.
int run_status_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ddp::launcher
