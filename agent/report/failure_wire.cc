#include "agent/report/failure_wire.h"

#include <fstream>
#include <sstream>

#include "agent/report/error_report.h"

namespace ddp::agent {
namespace {

using rendezvous::membership::Failure;
using rendezvous::membership::WallTime;

WallTime wall_time(std::chrono::system_clock::time_point at) {
  return std::chrono::time_point_cast<std::chrono::microseconds>(at);
}

WallTime wall_time(double unix_seconds) {
  return WallTime(std::chrono::microseconds(static_cast<std::int64_t>(unix_seconds * 1e6)));
}

// What the agent itself saw comes first in the traceback torchrun's table shows (the table
// shows the message only when there is no traceback).
void prepend(std::string& traceback, const std::string& note) {
  if (!traceback.empty()) traceback = note + "\n" + traceback;
}

Failure to_wire_failure(const WorkerFailure& w, const RunSetup& setup, int attempt) {
  Failure f;
  f.local_rank = static_cast<std::uint32_t>(w.local_rank);
  f.rank = static_cast<std::uint32_t>(setup.group.global_rank_base + w.local_rank);
  f.exit_code = w.status.signal != 0 ? -w.status.signal : w.status.code;
  f.pid = w.pid;
  f.time = wall_time(w.detected);
  const auto stack_file = setup.attempt_dir(attempt) / std::to_string(w.local_rank) / "stack.txt";
  if (w.hang) {
    f.error_file = stack_file.string();
    f.message = w.hang->summary;
    f.traceback = w.hang->stack_head;
    prepend(f.traceback, w.hang->summary);
    f.time = wall_time(w.hang->since);
    f.hung = w.hang->silent;
    if (f.hung) f.step = w.hang->step;
  } else if (auto error = read_error_file(setup.error_file(attempt, w.local_rank))) {
    f.error_file = setup.error_file(attempt, w.local_rank).string();
    f.message = error->message;
    f.traceback = error->traceback;
    if (error->timestamp) f.time = wall_time(*error->timestamp);
  }
  if (w.stuck) {  // what the agent saw first; an error file the worker wrote after it
    f.no_restart = true;
    f.time = wall_time(w.detected);
    f.message = "stuck: " + *w.stuck + (f.message.empty() ? "" : "\n" + f.message);
    prepend(f.traceback, f.message);
  }
  // The stack file the agent wrote when the group hung (docs/hangs.md), if any.
  if (std::ifstream stack(stack_file, std::ios::binary); stack) {
    std::ostringstream text;
    text << stack.rdbuf();
    f.diagnosis.stack_head = rendezvous::membership::head_lines(text.str());
  }
  return f;
}

}  // namespace

std::vector<Failure> to_wire_failures(const Outcome& outcome, const RunSetup& setup, int attempt) {
  std::vector<Failure> out;
  for (const WorkerFailure& w : outcome.failures) out.push_back(to_wire_failure(w, setup, attempt));
  return out;
}

}  // namespace ddp::agent
