#include "rendezvous/status/jobs_json.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "common/signal_name.h"

namespace ddp::rendezvous::status {
namespace {

using nlohmann::json;
namespace m = membership;

json steady_time(const Clocks& clocks, std::optional<m::TimePoint> t) {
  if (!t) return nullptr;
  return iso_time(clocks.to_wall(*t));
}

json failure_json(const std::optional<m::Failure>& f) {
  if (!f) return nullptr;
  return json{
      {"last_lines", f->diagnosis.last_lines},
      {"stack_head", f->diagnosis.stack_head},
      {"node_key", f->node_key},
      {"group_rank", f->group_rank},
      {"local_rank", f->local_rank},
      {"rank", f->rank},
      {"exit_code", f->exit_code},
      {"exit", "exit code " + describe_exit_code(f->exit_code)},
      {"pid", f->pid},
      {"time",
       iso_time(std::chrono::time_point_cast<std::chrono::system_clock::duration>(f->time))},
      {"error_file", f->error_file},
      {"message", f->message},
      {"traceback", f->traceback}};
}

json node_json(const m::NodeView& n, const Clocks& clocks) {
  json j{{"node_key", n.info.node_key},     {"addr", n.info.addr},
         {"store_port", n.info.store_port}, {"local_world_size", n.info.local_world_size},
         {"role", m::role_name(n.role)},    {"group_rank", nullptr},
         {"first_rank", nullptr},           {"last_rank", nullptr},
         {"succeeded", n.succeeded},        {"joined_at", iso_time(clocks.to_wall(n.joined_at))}};
  if (n.group_rank) j["group_rank"] = *n.group_rank;
  if (n.rank_offset) {
    j["first_rank"] = *n.rank_offset;
    j["last_rank"] = *n.rank_offset + n.info.local_world_size - 1;
  }
  return j;
}

// `one`: the job's own answer (/api/jobs/<id>), which adds its failed workers.
json job_object(const m::JobView& v, const Clocks& clocks, bool one) {
  json failures = json::object();
  for (std::size_t i = 0; i < m::kFailureCauseCount; ++i) {
    failures[std::string(m::cause_name(static_cast<m::FailureCause>(i)))] = v.counters.failures[i];
  }
  json last_failure = nullptr;
  if (v.last_stop) {
    last_failure = json{{"reason", m::stop_reason_name(v.last_stop->reason)},
                        {"detail", v.last_stop->detail},
                        {"at", iso_time(clocks.to_wall(v.last_stop->at))},
                        {"failure", failure_json(v.last_stop->failure)}};
  }
  json nodes = json::array();
  for (const m::NodeView& n : v.nodes) nodes.push_back(node_json(n, clocks));
  auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  json straggler_ranks = json::array();
  for (const m::RankStepView& r : v.steps.straggler_ranks) {
    straggler_ranks.push_back({{"rank", r.rank}, {"step_seconds", seconds(r.step_time)}});
  }
  const m::Goodput goodput = v.goodput(clocks.steady);
  json j{{"run_id", v.run_id},
         {"state", m::state_name(v.state)},
         {"round", v.round},
         {"restart_count", v.restart_count},
         {"max_restarts", v.config.max_restarts},
         {"min_nodes", v.config.min_nodes},
         {"max_nodes", v.config.max_nodes},
         {"pinned_ranks", v.pinned_ranks},
         {"node_count", v.node_count},
         {"world_size", v.world_size},
         {"rounds_completed", v.counters.rounds_completed},
         {"restarts", v.counters.restarts},
         {"last_round_latency_ms", v.counters.last_round_latency.count()},
         {"failures", failures},
         {"created_at", iso_time(clocks.to_wall(v.created_at))},
         {"round_completed_at", steady_time(clocks, v.round_completed_at)},
         {"finished_at", steady_time(clocks, v.finished_at)},
         {"exit_code", nullptr},
         {"finish_reason", nullptr},
         {"root_cause", failure_json(v.root_cause)},
         {"last_failure", last_failure},
         {"best_step", v.steps.best_step ? json(*v.steps.best_step) : json(nullptr)},
         {"no_progress_restarts", v.steps.no_progress_restarts},
         {"max_no_progress_restarts", v.config.max_no_progress_restarts},
         {"goodput", goodput.ratio()},
         {"stepping_seconds", seconds(goodput.stepping)},
         {"wall_seconds", seconds(goodput.wall)},
         {"stragglers", v.steps.stragglers},
         {"median_step_seconds", seconds(v.steps.median_step_time)},
         {"straggler_ranks", straggler_ranks},
         {"nodes", nodes}};
  if (v.exit_code) {
    j["exit_code"] = *v.exit_code;
    j["finish_reason"] = v.finish_reason;
  }
  if (one) {
    json failed = json::array();
    for (const m::Failure& f : v.failed_workers) failed.push_back(failure_json(f));
    j["failed_workers"] = failed;
    j["failed_worker_count"] = v.failed_worker_count;
  }
  return j;
}

}  // namespace

std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms.count() % 1000));
  return buf;
}

std::string format_jobs_json(const std::vector<m::JobView>& jobs, const Clocks& clocks) {
  json list = json::array();
  for (const m::JobView& v : jobs) list.push_back(job_object(v, clocks, false));
  // Invalid UTF-8 in a run id or message is replaced rather than failing the whole answer.
  return json{{"generated_at", iso_time(clocks.wall)}, {"jobs", list}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string format_job_json(const m::JobView& job, const Clocks& clocks) {
  return json{{"generated_at", iso_time(clocks.wall)}, {"job", job_object(job, clocks, true)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ddp::rendezvous::status
