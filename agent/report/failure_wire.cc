#include "agent/report/failure_wire.h"

#include <fstream>
#include <sstream>

#include "agent/report/error_report.h"

namespace ddp::agent {

FailureRecord failure_record(const WorkerFailure& failure, const RunSetup& setup, int attempt) {
  FailureRecord record;
  record.failure = failure;
  record.global_rank = setup.group.global_rank_base + failure.local_rank;
  record.error_file = setup.error_file(attempt, failure.local_rank).string();
  if (failure.hang) {
    record.error = ErrorFileInfo{
        failure.hang->summary, failure.hang->stack_head,
        std::chrono::duration<double>(failure.hang->since.time_since_epoch()).count()};
    record.error_file =
        (setup.attempt_dir(attempt) / std::to_string(failure.local_rank) / "stack.txt").string();
  } else {
    record.error = read_error_file(record.error_file);
  }
  if (failure.stuck) {  // what the agent saw first; an error file the worker wrote after it
    const double since = std::chrono::duration<double>(failure.detected.time_since_epoch()).count();
    std::string message = "stuck: " + *failure.stuck;
    if (record.error) {
      message += "\n" + record.error->message;
    } else {
      record.error_file.clear();
    }
    record.error = ErrorFileInfo{message, record.error ? record.error->traceback : "", since};
  }
  return record;
}

std::vector<rendezvous::membership::Failure> to_wire_failures(const Outcome& outcome,
                                                              const RunSetup& setup, int attempt) {
  std::vector<rendezvous::membership::Failure> out;
  for (const auto& w : outcome.failures) {
    const FailureRecord record = failure_record(w, setup, attempt);
    rendezvous::membership::Failure f;
    f.local_rank = static_cast<std::uint32_t>(w.local_rank);
    f.rank = static_cast<std::uint32_t>(setup.group.global_rank_base + w.local_rank);
    f.exit_code = w.status.signal != 0 ? -w.status.signal : w.status.code;
    f.pid = w.pid;
    f.no_restart = w.stuck.has_value();
    if (w.hang && w.hang->silent) {
      f.hung = true;
      f.step = w.hang->step;
    }
    f.time = rendezvous::membership::WallTime(
        std::chrono::microseconds(static_cast<std::int64_t>(record.failure_time() * 1e6)));
    if (record.error) {
      f.error_file = record.error_file;
      f.message = record.error->message;
      if (!record.error->traceback.empty()) f.message += "\n" + record.error->traceback;
    }
    // The stack file the agent wrote when the group hung (docs/hangs.md), if any.
    std::ifstream stack(setup.attempt_dir(attempt) / std::to_string(w.local_rank) / "stack.txt",
                        std::ios::binary);
    if (stack) {
      std::ostringstream text;
      text << stack.rdbuf();
      f.diagnosis.stack_head = rendezvous::membership::head_lines(text.str());
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string format_job_root_cause(const std::string& program,
                                  const rendezvous::membership::Failure& f) {
  FailureRecord record;
  record.failure.local_rank = static_cast<int>(f.local_rank);
  record.failure.pid = static_cast<pid_t>(f.pid);
  record.failure.status = f.exit_code < 0 ? proc::ExitStatus::killed(-f.exit_code)
                                          : proc::ExitStatus::exited(f.exit_code);
  record.failure.detected = std::chrono::system_clock::time_point(f.time.time_since_epoch());
  record.global_rank = static_cast<int>(f.rank);
  record.error_file = f.error_file;
  if (!f.message.empty()) record.error = ErrorFileInfo{f.message, {}, std::nullopt};
  return format_failure_report(program, f.node_key, {record}, 0);
}

}  // namespace ddp::agent
