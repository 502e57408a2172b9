#include "rendezvous/membership/config.h"

#include <string_view>
#include <type_traits>
#include <utility>

namespace ddp::rendezvous::membership {
namespace {

std::string ms(Duration d) { return std::to_string(d.count()) + "ms"; }

Status check_timeout(std::string_view name, Duration d) {
  if (d <= Duration::zero() || d > kMaxTimeout) {
    return invalid_argument(std::string(name) + " of " + ms(d) +
                            " is out of range; pass a positive duration of at most 30 days"
                            " in --rdzv-conf " +
                            std::string(name) + "=SECONDS");
  }
  return Status::ok();
}

template <typename T>
void add_diff(std::string& out, std::string_view name, const T& mine, const T& job) {
  if (mine == job) return;
  if (!out.empty()) out += ", ";
  if constexpr (std::is_same_v<T, Duration>) {
    out += std::string(name) + " " + ms(mine) + " (this node) vs " + ms(job) + " (the job)";
  } else {
    out += std::string(name) + " " + std::to_string(mine) + " (this node) vs " +
           std::to_string(job) + " (the job)";
  }
}

}  // namespace

Status validate(const Config& c) {
  if (c.min_nodes < 1) {
    return invalid_argument("min_nodes is 0; pass --nnodes N or MIN:MAX with MIN >= 1");
  }
  if (c.max_nodes > kMaxNodes) {
    return invalid_argument("max_nodes " + std::to_string(c.max_nodes) + " exceeds the limit of " +
                            std::to_string(kMaxNodes) + "; pass a smaller --nnodes MAX");
  }
  if (c.min_nodes > c.max_nodes) {
    return invalid_argument("min_nodes " + std::to_string(c.min_nodes) + " exceeds max_nodes " +
                            std::to_string(c.max_nodes) +
                            "; pass --nnodes MIN:MAX with MIN <= MAX");
  }
  if (c.max_restarts > kMaxRestarts) {
    return invalid_argument("max_restarts " + std::to_string(c.max_restarts) +
                            " exceeds the limit of " + std::to_string(kMaxRestarts) +
                            "; pass a smaller --max-restarts");
  }
  if (c.max_no_progress_restarts > kMaxRestarts) {
    return invalid_argument("max_no_progress_restarts " +
                            std::to_string(c.max_no_progress_restarts) + " exceeds the limit of " +
                            std::to_string(kMaxRestarts) +
                            "; pass a smaller --max-no-progress-restarts");
  }
  if (c.no_progress_exit_code < 1 || c.no_progress_exit_code > 255) {
    return invalid_argument("no_progress_exit_code " + std::to_string(c.no_progress_exit_code) +
                            " is out of range; pass --no-progress-exit-code 1..255");
  }
  if (c.straggler_factor_milli != 0 &&
      (c.straggler_factor_milli < 1000 || c.straggler_factor_milli > 1000 * 1000)) {
    return invalid_argument("straggler factor " +
                            std::to_string(c.straggler_factor_milli / 1000.0) +
                            " is out of range; pass --straggler-factor 0 (off) or 1..1000");
  }
  if (c.straggler_reports < 1 || c.straggler_reports > kMaxStragglerReports) {
    return invalid_argument("straggler_reports " + std::to_string(c.straggler_reports) +
                            " is out of range; pass --straggler-reports 1.." +
                            std::to_string(kMaxStragglerReports));
  }
  if (c.keep_alive_max_attempt < 1 || c.keep_alive_max_attempt > kMaxKeepAliveAttempts) {
    return invalid_argument("keep_alive_max_attempt " + std::to_string(c.keep_alive_max_attempt) +
                            " is out of range; pass 1.." + std::to_string(kMaxKeepAliveAttempts) +
                            " in --rdzv-conf keep_alive_max_attempt=N");
  }
  for (auto [name, d] : {std::pair<std::string_view, Duration>{"join_timeout", c.join_timeout},
                         {"last_call_timeout", c.last_call_timeout},
                         {"close_timeout", c.close_timeout},
                         {"keep_alive_interval", c.keep_alive_interval}}) {
    if (Status s = check_timeout(name, d); !s) return s;
  }
  return Status::ok();
}

std::string config_mismatch(const Config& mine, const Config& job) {
  std::string out;
  add_diff(out, "min_nodes", mine.min_nodes, job.min_nodes);
  add_diff(out, "max_nodes", mine.max_nodes, job.max_nodes);
  add_diff(out, "max_restarts", mine.max_restarts, job.max_restarts);
  add_diff(out, "join_timeout", mine.join_timeout, job.join_timeout);
  add_diff(out, "last_call_timeout", mine.last_call_timeout, job.last_call_timeout);
  add_diff(out, "close_timeout", mine.close_timeout, job.close_timeout);
  add_diff(out, "keep_alive_interval", mine.keep_alive_interval, job.keep_alive_interval);
  add_diff(out, "keep_alive_max_attempt", mine.keep_alive_max_attempt, job.keep_alive_max_attempt);
  add_diff(out, "max_no_progress_restarts", mine.max_no_progress_restarts,
           job.max_no_progress_restarts);
  add_diff(out, "no_progress_exit_code", mine.no_progress_exit_code, job.no_progress_exit_code);
  add_diff(out, "straggler_factor_milli", mine.straggler_factor_milli, job.straggler_factor_milli);
  add_diff(out, "straggler_reports", mine.straggler_reports, job.straggler_reports);
  add_diff(out, "exclude_straggler", mine.exclude_straggler, job.exclude_straggler);
  return out;
}

}  // namespace ddp::rendezvous::membership
