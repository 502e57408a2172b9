// A StatusSource with fixed content for the status formatters' and router's tests: one running
// 2-node job after a restart, one finished failed job, fixed clocks.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status::test {

using namespace std::chrono_literals;
namespace m = ddp::rendezvous::membership;

inline Clocks fixed_clocks() {
  Clocks c;
  c.steady = m::TimePoint{} + 10h;
  // 2026-01-02T03:04:05.678Z
  c.wall = std::chrono::system_clock::time_point{} + std::chrono::seconds(1767323045) + 678ms;
  return c;
}

inline m::Failure sample_failure() {
  m::Failure f;
  f.node_key = "host-b:7";
  f.group_rank = 1;
  f.local_rank = 0;
  f.rank = 2;
  f.exit_code = 3;
  f.pid = 4242;
  f.time = m::WallTime{} + std::chrono::seconds(1767323000);
  f.error_file = "/tmp/e.json";
  f.message = "RuntimeError: boom\nTraceback";
  f.diagnosis.last_lines = {"step 7", "RuntimeError: boom"};
  f.diagnosis.stack_head = {"Current thread"};
  return f;
}

inline m::JobView running_job() {
  const Clocks c = fixed_clocks();
  m::JobView v;
  v.run_id = "job-a";
  v.state = m::JobState::kRunning;
  v.round = 2;
  v.restart_count = 1;
  v.config.min_nodes = 2;
  v.config.max_nodes = 2;
  v.config.max_restarts = 3;
  v.world_size = 4;
  v.node_count = 2;
  v.created_at = c.steady - 60s;
  v.round_completed_at = c.steady - 5s;
  for (std::uint32_t r = 0; r < 2; ++r) {
    m::NodeView n;
    n.info = {"host-" + std::string(1, static_cast<char>('a' + r)) + ":7",
              "10.0.0." + std::to_string(r + 1), static_cast<std::uint16_t>(29500 + r), 2};
    n.role = m::NodeView::Role::kParticipant;
    n.group_rank = r;
    n.rank_offset = 2 * r;
    n.joined_at = c.steady - 60s;
    v.nodes.push_back(n);
  }
  v.last_stop = m::StopView{m::StopReason::kWorkerFailed, "worker rank 2 failed", sample_failure(),
                            c.steady - 6s};
  v.counters.rounds_completed = 2;
  v.counters.restarts = 1;
  v.counters.failures[static_cast<std::size_t>(m::FailureCause::kWorkerFailed)] = 1;
  v.counters.last_round_latency = 250ms;
  return v;
}

inline m::JobView finished_job() {
  const Clocks c = fixed_clocks();
  m::JobView v;
  v.run_id = "job \"b\"\\x";
  v.state = m::JobState::kFinished;
  v.round = 1;
  v.created_at = c.steady - 120s;
  v.finished_at = c.steady - 100s;
  v.exit_code = 3;
  v.finish_reason = "failed: worker rank 2 failed";
  v.root_cause = sample_failure();
  v.failed_workers = {sample_failure(), sample_failure()};
  v.failed_workers[1].rank = 3;
  v.failed_worker_count = 5;
  return v;
}

class FakeStatusSource final : public StatusSource {
 public:
  MetricsInput metrics() const override {
    MetricsInput in;
    in.jobs = {running_job(), finished_job()};
    in.jobs[0].nodes.clear();  // as the daemon takes them for /metrics
    in.jobs[0].connections = 2;
    in.now = fixed_clocks().steady;
    in.totals.jobs_created = 2;
    in.totals.rounds_completed = 3;
    in.totals.restarts = 1;
    in.totals.failures[static_cast<std::size_t>(m::FailureCause::kWorkerFailed)] = 2;
    in.totals.round_latency.observe(3ms);
    in.totals.round_latency.observe(250ms);
    in.totals.round_latency.observe(100s);
    in.server.connections = 5;
    in.server.keys = 7;
    in.server.bytes = 1234;
    in.server.ops[static_cast<std::size_t>(Op::kSet)] = 11;
    in.server.ops[static_cast<std::size_t>(Op::kGet)] = 13;
    in.process.rss_bytes = 5 << 20;
    in.process.cpu_seconds = 1.25;
    in.http.requests = 9;
    return in;
  }
  std::vector<m::JobView> jobs() const override { return {running_job(), finished_job()}; }
  std::optional<m::JobView> job(std::string_view run_id) const override {
    for (m::JobView& v : jobs()) {
      if (v.run_id == run_id) return v;
    }
    return std::nullopt;
  }
  Clocks clocks() const override { return fixed_clocks(); }
};

}  // namespace ddp::rendezvous::status::test
