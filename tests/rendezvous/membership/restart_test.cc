// Leaving a running round: waiting nodes, lost nodes (closed connection, missed heartbeats),
// worker failures fanned out to every node, the job-global restart count, stop timeouts.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

// Nodes 1..n joined; the round is running (n == MAX, or after the last call).
void start(Harness& h, int n) {
  for (int i = 1; i <= n; ++i) h.join(static_cast<NodeId>(i));
  if (h.job().state() == Job::State::kPending) h.run_for(h.config.last_call_timeout);
  REQUIRE(h.job().state() == Job::State::kRunning);
}

TEST_CASE("a node arriving while running triggers a restart that does not count", "[restart]") {
  Harness h;
  start(h, 2);
  Events e = h.join(3);
  CHECK(only_for<Joined>(e, 3) == Joined{2, true});
  for (NodeId id : {1, 2}) {
    const StopWorkers s = only_for<StopWorkers>(e, id);
    CHECK(s.round == 1);
    CHECK(s.reason == StopReason::kNodeJoined);
  }
  CHECK(h.job().state() == Job::State::kStopping);
  CHECK(h.send(1, WorkersStopped{1}).empty());
  e = h.send(2, WorkersStopped{1});
  REQUIRE(of_type<RoundComplete>(e).size() == 3);
  CHECK(only_for<RoundComplete>(e, 1) == RoundComplete{2, 0, 0, 3, 1, 0, 3, "10.0.0.1", 29501});
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 2);
  CHECK(h.job().restart_count() == 0);
  CHECK(h.job().round() == 2);
}

TEST_CASE("a node arriving when the job is at MAX waits without a restart", "[restart]") {
  Harness h;
  h.config.max_nodes = 2;
  start(h, 2);
  const Events e = h.join(3);
  CHECK(only_for<Joined>(e, 3).waiting);
  CHECK(of_type<StopWorkers>(e).empty());
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("a spare takes a lost node's group rank and the survivors keep theirs", "[restart]") {
  Harness h;
  h.config.max_nodes = 3;
  start(h, 3);
  CHECK(of_type<StopWorkers>(h.join(4)).empty());  // at MAX: a spare
  CHECK(h.job().view().nodes.back().role == NodeView::Role::kSpare);
  Events e = h.close(2);  // group rank 1
  CHECK(only_for<StopWorkers>(e, 1).reason == StopReason::kNodeLost);
  CHECK(of_type<StopWorkers>(e).size() == 2);  // the spare runs nothing
  h.send(1, WorkersStopped{1});
  e = h.send(3, WorkersStopped{1});
  REQUIRE(of_type<RoundComplete>(e).size() == 3);
  CHECK(only_for<RoundComplete>(e, 1).group_rank == 0);
  CHECK(only_for<RoundComplete>(e, 4).group_rank == 1);  // the lost node's
  CHECK(only_for<RoundComplete>(e, 4).rank_offset == 1);
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 2);  // kept
  CHECK(h.job().restart_count() == 0);                   // as without a spare
}

TEST_CASE("a closed connection stops every other node at once and restarts", "[restart]") {
  Harness h;
  start(h, 3);
  Events e = h.close(2);
  CHECK(of_type<StopWorkers>(e).size() == 2);
  const StopWorkers s = only_for<StopWorkers>(e, 1);
  CHECK(s.reason == StopReason::kNodeLost);
  CHECK_THAT(s.detail, Catch::Contains("host-2 (group rank 1) closed its connection"));
  CHECK(h.job().restart_count() == 0);  // a departure, not a failure
  h.send(1, WorkersStopped{1});
  e = h.send(3, WorkersStopped{1});
  // Survivors keep their order: node 1 stays rank 0 and keeps hosting the store.
  CHECK(only_for<RoundComplete>(e, 1) == RoundComplete{2, 0, 0, 2, 1, 0, 2, "10.0.0.1", 29501});
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 1);
}

TEST_CASE("a silent node is gone after the heartbeat budget, not before", "[restart]") {
  Harness h;
  h.config.keep_alive_interval = 1s;  // budget 3 s
  h.config.max_nodes = 2;
  h.join(1);
  h.join(2);
  REQUIRE(h.job().state() == Job::State::kRunning);
  const TimePoint last_heard_2 = h.now;
  while (h.now + 500ms < last_heard_2 + 3s) {
    CHECK(h.run_for(500ms).empty());
    h.heartbeat(1);
  }
  CHECK(h.run_until(last_heard_2 + 3s - 1ms).empty());
  const Events e = h.run_until(last_heard_2 + 3s);
  const StopWorkers s = only_for<StopWorkers>(e, 1);
  CHECK(s.reason == StopReason::kNodeLost);
  CHECK_THAT(s.detail, Catch::Contains("host-2 (group rank 1) missed its heartbeats"));
  CHECK_FALSE(h.job().has_node(2));
}

TEST_CASE("a node removed for missed heartbeats is told at once, its late reports are refused",
          "[restart]") {
  Harness h;
  h.config.keep_alive_interval = 1s;  // budget 3 s
  h.config.max_nodes = 3;             // the round forms at once, within the budget
  start(h, 3);
  for (int i = 0; i < 2; ++i) {
    h.run_for(1s);
    h.heartbeat(1);
    h.heartbeat(2);
  }
  const Events e = h.run_for(1s);  // node 3, silent since it joined, is removed now
  CHECK(of_type<StopWorkers>(e).size() == 2);
  const ErrorEvent told = only_for<ErrorEvent>(e, 3);
  CHECK(told.code == ErrorCode::kPeerGone);
  CHECK_THAT(told.message, Catch::Contains("removed this node from job 'job'") &&
                               Catch::Contains("host-3 (group rank 2) missed its heartbeats") &&
                               Catch::Contains("keep_alive_max_attempt"));
  // Waking up, it reports success for the round it was in: refused with the same reason.
  auto check_refused = [](const Events& reply) {
    const ErrorEvent refused = only_for<ErrorEvent>(reply, 3);
    CHECK(refused.code == ErrorCode::kPeerGone);
    CHECK_THAT(refused.message,
               Catch::Contains("request refused") && Catch::Contains("missed its heartbeats"));
  };
  check_refused(h.send(3, ReportSuccess{1}));
  check_refused(h.heartbeat(3));
  check_refused(h.send(3, ReportFailure{1, {failure(2, 1, 1)}}));
  CHECK(h.job().restart_count() == 0);
  // The survivors re-form; the removed node's connection closing changes nothing.
  h.send(1, WorkersStopped{1});
  CHECK(of_type<RoundComplete>(h.send(2, WorkersStopped{1})).size() == 2);
  CHECK(h.close(3).empty());
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("a survivor re-formed alone after a partition keeps its place while it beats",
          "[restart]") {
  // The fault campaign's case (issue 31): --nnodes 1:2, a 1 s budget (0.25 s x 4), the other
  // node's link cut 0.25 s after the start; the survivor was later removed for missed
  // heartbeats while healthy. Its deadline must run from its own last message in every round.
  Harness h;
  h.config.min_nodes = 1;
  h.config.max_nodes = 2;
  h.config.keep_alive_interval = 250ms;
  h.config.keep_alive_max_attempt = 4;
  start(h, 2);
  h.run_for(250ms);
  h.heartbeat(1);
  h.heartbeat(2);  // node 2's last word: its link is cut now
  Events e;
  for (int i = 0; i < 5; ++i) {
    Events tick = h.run_for(250ms);
    e.insert(e.end(), tick.begin(), tick.end());
    h.heartbeat(1);
  }
  CHECK(only_for<StopWorkers>(e, 1).reason == StopReason::kNodeLost);
  CHECK_FALSE(h.job().has_node(2));
  // Node 1 stops its workers (taking 0.9 s) and re-forms alone, in round 2.
  h.run_for(900ms);
  CHECK(only_for<RoundComplete>(h.send(1, WorkersStopped{1}), 1).group_world_size == 1);
  // It beats at its interval, sometimes late by most of the budget: never removed.
  for (int i = 0; i < 400; ++i) {
    CHECK(h.run_for(i % 10 == 9 ? 990ms : 250ms).empty());
    h.heartbeat(1);
  }
  CHECK(h.close(2).empty());  // the link comes back and node 2's connection closes
  CHECK(h.run_for(990ms).empty());
  CHECK(h.job().has_node(1));
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("elastic scale-down re-forms without a restart, departures past MAX count", "[restart]") {
  Harness h;
  h.config.min_nodes = 1;
  h.config.max_nodes = 3;
  h.config.max_restarts = 0;
  start(h, 3);
  auto stopped = [&h](NodeId a, NodeId b) {
    h.send(a, WorkersStopped{h.job().round()});
    return h.send(b, WorkersStopped{h.job().round()});
  };
  // The first max_nodes departures are free: node 3 leaves, 4 arrives and leaves, 5 too.
  NodeId leaving = 3;
  for (std::uint32_t departure = 1; departure <= 3; ++departure, ++leaving) {
    CHECK(of_type<StopWorkers>(h.send(leaving, Leave{"SIGTERM"})).size() == 2);
    CHECK(of_type<RoundComplete>(stopped(1, 2)).size() == 2);
    CHECK(h.job().restart_count() == 0);
    CHECK(h.job().departures() == departure);
    CHECK(of_type<StopWorkers>(h.join(leaving + 1)).size() == 2);  // admitting it is free too
    CHECK(of_type<RoundComplete>(stopped(1, 2)).size() == 3);
  }
  // The fourth departure counts like a failure: no restarts left, the job fails.
  const Events e = h.close(leaving);
  CHECK_THAT(only_for<StopWorkers>(e, 1).detail,
             Catch::Contains("departures after the first 3 count as restarts") &&
                 Catch::Contains("no restarts left"));
  CHECK(only_for<JobFinished>(stopped(1, 2), 1).exit_code == 1);
}

TEST_CASE("heartbeats keep a node alive indefinitely", "[restart]") {
  Harness h;
  h.config.keep_alive_interval = 1s;
  h.config.max_nodes = 2;  // starts at once, before the 3 s budget of the joins runs out
  start(h, 2);
  for (int i = 0; i < 100; ++i) {
    CHECK(h.run_for(1s).empty());
    h.heartbeat(1);
    h.heartbeat(2);
  }
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("a failure is pushed to all and counts once however many nodes report it", "[restart]") {
  Harness h;
  start(h, 3);
  Events e = h.send(2, ReportFailure{1, {failure(1, 3, 2'000)}});
  CHECK(of_type<StopWorkers>(e).size() == 3);
  const StopWorkers s = only_for<StopWorkers>(e, 3);
  CHECK(s.reason == StopReason::kWorkerFailed);
  REQUIRE(s.first_failure);
  CHECK(s.first_failure->node_key == "host-2");
  CHECK(s.first_failure->group_rank == 1);
  CHECK(h.job().restart_count() == 1);
  // Node 3's own workers failed too in the same round: recorded, not counted again.
  CHECK(h.send(3, ReportFailure{1, {failure(2, 9, 1'000)}}).empty());
  CHECK(h.job().restart_count() == 1);
  e = h.send(1, WorkersStopped{1});
  for (NodeId id : {1, 2, 3}) CHECK(only_for<RoundComplete>(e, id).restart_count == 1);
  // A straggling report for the old round changes nothing.
  CHECK(h.send(3, ReportFailure{1, {failure(2, 9, 500)}}).empty());
  CHECK(h.job().restart_count() == 1);
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("a worker killed by a signal is named as the root-cause table names it", "[restart]") {
  Harness h;
  start(h, 2);
  const Events e = h.send(2, ReportFailure{1, {failure(1, -9, 1'000)}});
  CHECK_THAT(only_for<StopWorkers>(e, 1).detail,
             Catch::Contains("failed with exit code 137 (killed by SIGKILL)"));
}

TEST_CASE("restarts exhausted: the job fails with the earliest failure across nodes", "[restart]") {
  Harness h;
  h.config.max_restarts = 0;
  start(h, 2);
  Events e = h.send(1, ReportFailure{1, {failure(0, 3, 5'000'000)}});
  CHECK(of_type<StopWorkers>(e).size() == 2);
  CHECK(of_type<JobFinished>(e).empty());  // node 2's report may still name an earlier cause
  e = h.send(2, ReportFailure{1, {failure(1, -9, 4'000'000)}});
  REQUIRE(of_type<JobFinished>(e).size() == 2);
  const JobFinished f1 = only_for<JobFinished>(e, 1);
  CHECK(f1 == only_for<JobFinished>(e, 2));
  REQUIRE(f1.root_cause);
  CHECK(f1.root_cause->node_key == "host-2");
  CHECK(f1.root_cause->rank == 1);
  CHECK(f1.exit_code == 128 + 9);
  CHECK_THAT(f1.reason, Catch::Contains("no restarts left"));
  CHECK(h.job().state() == Job::State::kFinished);
  // The job keeps what every node was told, for a process embedding the daemon.
  REQUIRE(h.job().root_cause());
  CHECK(*h.job().root_cause() == *f1.root_cause);
  CHECK(h.job().exit_code() == f1.exit_code);
}

// Rank `rank` on its node could not be ended (SIGKILLed): the job must not restart for it.
Failure stuck_failure(std::uint32_t rank, std::int64_t unix_us) {
  Failure f = failure(rank, -9, unix_us);
  f.no_restart = true;
  return f;
}

TEST_CASE("a stuck worker's failure ends the job though restarts remain", "[restart]") {
  Harness h;
  h.config.max_restarts = 3;
  start(h, 2);
  Events e = h.send(2, ReportFailure{1, {stuck_failure(1, 5'000'000)}});
  CHECK_THAT(only_for<StopWorkers>(e, 1).detail,
             Catch::Contains("no restart: worker rank 1 on node host-2 is stuck"));
  e = h.send(1, WorkersStopped{1});
  REQUIRE(of_type<JobFinished>(e).size() == 2);
  CHECK(of_type<RoundComplete>(e).empty());
  const JobFinished f = only_for<JobFinished>(e, 1);
  REQUIRE(f.root_cause);
  CHECK(f.root_cause->no_restart);
  CHECK(f.exit_code == 128 + 9);
  CHECK(h.job().restart_count() == 0);
}

TEST_CASE("a stuck worker reported during another node's stop cancels its restart", "[restart]") {
  Harness h;
  h.config.max_restarts = 3;
  start(h, 2);
  Events e = h.send(1, ReportFailure{1, {failure(0, 3, 4'000'000)}});
  CHECK(of_type<StopWorkers>(e).size() == 2);
  e = h.send(2, ReportFailure{1, {stuck_failure(1, 5'000'000)}});
  REQUIRE(of_type<JobFinished>(e).size() == 2);
  const JobFinished f = only_for<JobFinished>(e, 2);
  CHECK(f.root_cause->rank == 0);  // still the earliest failure
  CHECK(f.exit_code == 3);
  CHECK_THAT(f.reason, Catch::Contains("worker rank 1 on node host-2 is stuck"));
}

TEST_CASE("fewer than MIN survivors: the job fails", "[restart]") {
  Harness h;
  start(h, 2);
  Events e = h.close(2);
  REQUIRE(of_type<StopWorkers>(e).size() == 1);
  e = h.send(1, WorkersStopped{1});
  const JobFinished f = only_for<JobFinished>(e, 1);
  CHECK(f.exit_code == 1);
  CHECK_FALSE(f.root_cause);
  CHECK_THAT(f.reason, Catch::Contains("1 node(s) remain, fewer than min 2"));
}

TEST_CASE("a lost node during a stop does not count another restart", "[restart]") {
  Harness h;
  start(h, 3);
  h.send(1, ReportFailure{1, {failure(0, 1, 1)}});
  h.close(3);
  CHECK(h.job().restart_count() == 1);
  const Events e = h.send(2, WorkersStopped{1});
  CHECK(only_for<RoundComplete>(e, 1).group_world_size == 2);
}

TEST_CASE("a node that never reports stopped is dropped after close_timeout", "[restart]") {
  Harness h;
  start(h, 3);
  h.send(1, ReportFailure{1, {failure(0, 1, 1)}});
  h.send(2, WorkersStopped{1});
  CHECK(h.run_until(h.now + h.config.close_timeout - 1ms).empty());
  const Events e = h.run_for(1ms);
  CHECK(only_for<RoundComplete>(e, 1).group_world_size == 2);
  CHECK(only_for<RoundComplete>(e, 2).group_rank == 1);
  CHECK_FALSE(h.job().has_node(3));
  const ErrorEvent told = only_for<ErrorEvent>(e, 3);
  CHECK(told.code == ErrorCode::kPeerGone);
  CHECK_THAT(told.message, Catch::Contains("did not stop its workers") &&
                               Catch::Contains("raise --rdzv-conf close_timeout"));
}

TEST_CASE("a SIGTERMed agent's LEAVE is a lost node, not the end of the job", "[restart]") {
  Harness h;
  start(h, 3);
  Events e = h.send(3, Leave{"SIGTERM"});
  CHECK_THAT(only_for<StopWorkers>(e, 1).detail, Catch::Contains("left (SIGTERM)"));
  h.send(1, WorkersStopped{1});
  e = h.send(2, WorkersStopped{1});
  CHECK(of_type<RoundComplete>(e).size() == 2);
  CHECK(h.job().state() == Job::State::kRunning);
  // The rendezvous is still open: a new node is admitted (with a free restart).
  e = h.join(4);
  CHECK(only_for<Joined>(e, 4).waiting);
  CHECK(of_type<StopWorkers>(e).size() == 2);
}

TEST_CASE("a node arriving during a stop joins the next round without another stop", "[restart]") {
  Harness h;
  start(h, 2);
  h.send(1, ReportFailure{1, {failure(0, 1, 1)}});
  Events e = h.join(3);
  CHECK(only_for<Joined>(e, 3) == Joined{2, true});
  CHECK(of_type<StopWorkers>(e).empty());
  e = h.send(2, WorkersStopped{1});
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 2);
  CHECK(h.job().restart_count() == 1);
}

TEST_CASE("a clock reading earlier than one already seen counts as the one seen", "[restart]") {
  Harness h;
  h.config.keep_alive_interval = 1s;
  h.config.max_nodes = 2;
  start(h, 2);
  h.now += 2s;
  h.heartbeat(1);
  h.now -= 2s;  // a caller bug or a reordered input must not move deadlines backwards
  h.heartbeat(2);
  h.now += 2s;
  // Both were last heard at +2 s: neither is gone before +5 s.
  CHECK(h.run_until(h.now + 3s - 1ms).empty());
  CHECK(of_type<StopWorkers>(h.run_for(1ms)).size() == 1);  // the first gone stops the other
  CHECK(h.job().state() == Job::State::kFinished);          // then it is gone too
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
