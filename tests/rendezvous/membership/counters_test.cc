// The observers' record of a job (job_view.h): counters, views, and the registry's totals,
// checked against what the inputs did.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

std::uint64_t failures(const JobCounters& c, FailureCause cause) {
  return c.failures[static_cast<std::size_t>(cause)];
}

TEST_CASE("counters: rounds, one restart per failed round, latency from the first join",
          "[counters]") {
  Harness h;
  h.config.max_nodes = 2;
  h.join(1, 2);
  h.now += 300ms;
  h.join(2, 3);  // MAX: the round completes now, 300 ms after the first JOIN
  const JobView first = h.job().view();
  CHECK(first.state == JobState::kRunning);
  CHECK(first.counters.rounds_completed == 1);
  CHECK(first.counters.last_round_latency == 300ms);
  CHECK(first.world_size == 5);
  REQUIRE(first.nodes.size() == 2);
  CHECK(first.nodes[0].info.node_key == "host-1");
  CHECK(first.nodes[0].group_rank == 0u);
  CHECK(first.nodes[0].rank_offset == 0u);
  CHECK(first.nodes[1].group_rank == 1u);
  CHECK(first.nodes[1].rank_offset == 2u);
  CHECK(first.nodes[1].info.addr == "10.0.0.2");
  CHECK(!first.last_stop);

  h.now += 1s;
  h.send(2, ReportFailure{1, {failure(3, 1, 1'000'000)}});
  h.send(1, ReportFailure{1, {failure(0, 7, 500'000)}});  // earlier: the root of the stop
  h.now += 40ms;
  h.send(1, WorkersStopped{1});  // already counted as stopped; restart happened at the 2nd report
  const JobView second = h.job().view();
  CHECK(second.round == 2);
  CHECK(second.restart_count == 1);
  CHECK(second.counters.restarts == 1);
  CHECK(second.counters.rounds_completed == 2);
  CHECK(failures(second.counters, FailureCause::kWorkerFailed) == 1);
  REQUIRE(second.last_stop);
  CHECK(second.last_stop->reason == StopReason::kWorkerFailed);
  REQUIRE(second.last_stop->failure);
  CHECK(second.last_stop->failure->rank == 0);  // the earliest across both reports
  CHECK(second.last_stop->failure->node_key == "host-1");

  const RegistryTotals& t = h.registry.totals();
  CHECK(t.jobs_created == 1);
  CHECK(t.rounds_completed == 2);
  CHECK(t.restarts == 1);
  CHECK(t.failures[static_cast<std::size_t>(FailureCause::kWorkerFailed)] == 1);
  CHECK(t.round_latency.count == 2);
  CHECK(t.round_latency.sum_seconds == Approx(0.3));  // the restart round formed at once
}

TEST_CASE("counters: lost nodes by cause, and totals survive the job's retention", "[counters]") {
  Harness h;
  h.config.min_nodes = 1;
  h.config.max_nodes = 3;
  h.config.keep_alive_interval = 1s;
  for (NodeId id : {1, 2, 3}) h.join(id);
  REQUIRE(h.job().state() == JobState::kRunning);
  h.close(3);
  CHECK(failures(h.job().counters(), FailureCause::kConnectionClosed) == 1);
  h.send(1, WorkersStopped{1});
  h.send(2, WorkersStopped{1});
  REQUIRE(h.job().round() == 2);
  h.send(2, Leave{"SIGTERM"});
  CHECK(failures(h.job().counters(), FailureCause::kNodeLeft) == 1);
  h.send(1, WorkersStopped{2});
  REQUIRE(h.job().round() == 3);
  // Node 1 goes silent: removed for missed heartbeats, and the job (below MIN? no: MIN 1, 0
  // left) finishes.
  h.run_for(5s);
  CHECK(failures(h.job().counters(), FailureCause::kHeartbeatMissed) == 1);
  CHECK(h.job().state() == JobState::kFinished);
  CHECK(h.job().counters().restarts == 0);  // departures within the first MAX don't count
  const JobView v = h.job().view();
  CHECK(v.finished_at);
  CHECK(v.exit_code);
  CHECK(v.nodes.empty());
  h.run_until(h.registry.next_deadline().value() + 1ms);  // retention ends
  CHECK(h.registry.find("job") == nullptr);
  const RegistryTotals& t = h.registry.totals();
  CHECK(t.failures[static_cast<std::size_t>(FailureCause::kConnectionClosed)] == 1);
  CHECK(t.failures[static_cast<std::size_t>(FailureCause::kNodeLeft)] == 1);
  CHECK(t.failures[static_cast<std::size_t>(FailureCause::kHeartbeatMissed)] == 1);
  CHECK(t.rounds_completed == 3);
  CHECK(h.registry.jobs().empty());
}

TEST_CASE("counters: a join timeout below MIN is a failure of its own cause", "[counters]") {
  Harness h;
  h.config.keep_alive_interval = h.config.join_timeout;  // not removed for silence first
  h.join(1);
  h.run_for(h.config.join_timeout);
  CHECK(h.job().state() == JobState::kFinished);
  CHECK(failures(h.job().counters(), FailureCause::kJoinTimeout) == 1);
  CHECK(h.registry.totals().failures[static_cast<std::size_t>(FailureCause::kJoinTimeout)] == 1);
  CHECK(h.registry.totals().rounds_completed == 0);
}

TEST_CASE("job view lists waiting nodes after the participants", "[counters]") {
  Harness h;
  h.config.max_nodes = 2;
  h.join(1);
  h.join(2);
  h.join(3);  // waits: the job is at MAX, a spare
  const JobView v = h.job().view();
  REQUIRE(v.nodes.size() == 3);
  CHECK(v.nodes[2].role == NodeView::Role::kSpare);
  CHECK(role_name(v.nodes[2].role) == "spare");
  CHECK(!v.nodes[2].group_rank);
  CHECK(state_name(v.state) == "running");
  CHECK(role_name(v.nodes[0].role) == "participant");
  CHECK(cause_name(FailureCause::kStopTimeout) == "stop_timeout");
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
