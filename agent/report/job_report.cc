#include "agent/report/job_report.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "agent/report/error_report.h"
#include "agent/report/failure_wire.h"

namespace ddp::agent {
namespace {

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void LocalJobReport::job_finished(const rendezvous::membership::JobFinished& finished,
                                  const WorkersResult* last) {
  if (finished.no_progress) spdlog::error("job {}", finished.reason);  // why no restart followed
  if (finished.exit_code == 0 || last == nullptr) return;
  if (last->outcome.kind != Outcome::Kind::kFailed) return;  // an error was logged already
  std::vector<FailureRecord> records;
  for (const auto& f : last->outcome.failures)
    records.push_back(failure_record(f, setup_, f.attempt));
  if (records.empty()) return;
  print(format_failure_report(program_name(config_.worker_argv, config_.python_workers),
                              setup_.hostname, records, root_cause_index(records)));
}

void RootCauseReport::job_finished(const rendezvous::membership::JobFinished& finished,
                                   const WorkersResult*) {
  if (finished.root_cause && !config_.job_report_by_launcher) {
    std::string table = format_job_root_cause(
        program_name(config_.worker_argv, config_.python_workers), *finished.root_cause);
    if (!finished.reason.empty()) table += "job " + run_id_ + ": " + finished.reason + "\n";
    const auto& lines = finished.root_cause->diagnosis.last_lines;
    if (!lines.empty()) {
      table += "last lines of rank " + std::to_string(finished.root_cause->rank) + ":\n";
      for (const std::string& line : lines) table += "  " + line + "\n";
    }
    print(table);
  }
  if (finished.exit_code != 0 && !finished.root_cause) {
    spdlog::error("job failed: {}", finished.reason);
  }
  spdlog::info("job {} finished with exit code {}", run_id_, finished.exit_code);
}

}  // namespace ddp::agent
