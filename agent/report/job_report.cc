#include "agent/report/job_report.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "agent/report/error_report.h"
#include "rendezvous/membership/job.h"

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
  if (last->outcome.kind != Outcome::Kind::kFailed || last->failures.empty()) return;
  std::vector<rendezvous::membership::Failure> failures = last->failures;
  for (auto& f : failures) f.node_key = setup_.hostname;
  // The job's root cause, as for a job of many nodes (rendezvous/membership/job.h).
  const auto root =
      finished.root_cause ? finished.root_cause : rendezvous::membership::root_cause_of(failures);
  std::size_t index = 0;
  while (index + 1 < failures.size() && failures[index].rank != root->rank) ++index;
  print(format_failure_report(program_name(config_.worker_argv, config_.python_workers), failures,
                              index));
}

void RootCauseReport::job_finished(const rendezvous::membership::JobFinished& finished,
                                   const WorkersResult*) {
  if (finished.root_cause && !config_.job_report_by_launcher) {
    std::string table = format_failure_report(
        program_name(config_.worker_argv, config_.python_workers), {*finished.root_cause}, 0);
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
