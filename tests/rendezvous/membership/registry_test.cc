// Many jobs in one registry: independent state, one earliest deadline across them.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

TEST_CASE("many jobs run side by side without touching each other", "[registry]") {
  Harness h;
  h.config.max_nodes = 2;
  constexpr int kJobs = 50;
  for (int j = 0; j < kJobs; ++j) {
    const std::string run = "run-" + std::to_string(j);
    h.join(static_cast<NodeId>(2 * j + 1), 1, run);
    const Events e = h.join(static_cast<NodeId>(2 * j + 2), 3, run);
    CHECK(only_for<RoundComplete>(e, 2 * j + 2).world_size == 4);
    CHECK(only_for<RoundComplete>(e, 2 * j + 1).store_addr ==
          "10.0.0." + std::to_string(2 * j + 1));
  }
  CHECK(h.registry.jobs().size() == kJobs);
  // A failure in run-7 stops run-7's nodes only.
  const Events e = h.send(15, ReportFailure{1, {failure(0, 2, 1)}});
  for (const Event& ev : e) CHECK((ev.to == 15 || ev.to == 16));
  CHECK(h.job("run-7").state() == Job::State::kStopping);
  CHECK(h.job("run-8").state() == Job::State::kRunning);
  // Success of run-3 ends run-3 only.
  h.send(7, ReportSuccess{1});
  CHECK(of_type<JobFinished>(h.send(8, ReportSuccess{1})).size() == 2);
  CHECK(h.job("run-3").state() == Job::State::kFinished);
  CHECK(h.job("run-4").state() == Job::State::kRunning);
}

TEST_CASE("the registry's next deadline is the earliest over all jobs", "[registry]") {
  Harness h;
  h.join(1, 1, "a");  // join deadline of a: now + 60 s (heartbeat budget 30 s earlier)
  CHECK(h.registry.next_deadline() == h.now + h.config.heartbeat_budget());
  h.run_for(1s);
  h.config.keep_alive_interval = 1s;  // job b: 3 s budget
  h.join(2, 1, "b");
  CHECK(h.registry.next_deadline() == h.now + 3s);
  const Events e = h.run_for(3s);  // b's only node goes silent: b is erased, a untouched
  REQUIRE(e.size() == 1);
  CHECK(only_for<ErrorEvent>(e, 2).code == ErrorCode::kPeerGone);  // told it was removed
  CHECK(h.registry.find("b") == nullptr);
  REQUIRE(h.registry.find("a") != nullptr);
  CHECK(h.registry.next_deadline() == h.now - 4s + 30s);
}

TEST_CASE("jobs with the same connection ids in sequence stay apart", "[registry]") {
  Harness h;
  h.config.max_nodes = 2;
  h.join(1, 1, "x");
  h.join(2, 1, "x");
  h.send(1, Leave{"done"});
  // Connection 1 joins another job after leaving x.
  CHECK(only_for<Joined>(h.join(1, 1, "y"), 1) == Joined{1, false});
  CHECK(h.job("y").has_node(1));
  CHECK_FALSE(h.job("x").has_node(1));
}

TEST_CASE("a job's bound connections: joined until LEAVE or close, after the end too",
          "[registry]") {
  Harness h;
  h.config.max_nodes = 3;
  CHECK(h.registry.connections("x") == 0);
  for (NodeId id : {1, 2, 3}) h.join(id, 1, "x");
  h.join(9, 1, "other");
  CHECK(h.registry.connections("x") == 3);
  h.send(3, Leave{"SIGTERM"});
  CHECK(h.registry.connections("x") == 2);
  h.send(1, WorkersStopped{1});
  h.send(2, WorkersStopped{1});
  h.send(1, ReportSuccess{2});
  CHECK(of_type<JobFinished>(h.send(2, ReportSuccess{2})).size() == 2);
  CHECK(h.job("x").state() == Job::State::kFinished);
  CHECK(h.registry.connections("x") == 2);  // told JobFinished, not yet closed
  h.close(1);
  h.close(2);
  h.close(2);  // twice: counted once
  CHECK(h.registry.connections("x") == 0);
  CHECK(h.registry.connections("other") == 1);
}

TEST_CASE("a pardon after the daemon's own pause gives every node a fresh budget", "[registry]") {
  Harness h;
  h.config.keep_alive_interval = 1s;  // budget 3 s
  h.config.max_nodes = 2;
  h.join(1);
  h.join(2);
  REQUIRE(h.job().state() == Job::State::kRunning);
  h.now += 10s;  // the daemon did not run: its timer fires 7 s late
  h.registry.pardon(h.now);
  CHECK(h.registry.on_deadline(h.now).empty());
  CHECK(h.registry.next_deadline() == h.now + 3s);
  h.now += 1s;
  h.heartbeat(1);  // node 1's heartbeats come in again; node 2 stays silent
  const Events e = h.run_for(2s);
  CHECK(of_type<StopWorkers>(e).size() == 1);
  CHECK_FALSE(h.job().has_node(2));
  CHECK(h.job().has_node(1));
}

TEST_CASE("a node removed for silence no longer counts as a connection of its job", "[registry]") {
  Harness h;
  h.config.keep_alive_interval = 1s;
  h.config.max_nodes = 2;
  h.join(1);
  h.join(2);
  h.run_for(2s);
  h.heartbeat(1);
  h.run_for(1s);  // node 2 silent for 3 s: removed, its connection still open
  CHECK_FALSE(h.job().has_node(2));
  CHECK(h.registry.connections("job") == 1);
  h.close(2);
  CHECK(h.registry.connections("job") == 1);
  h.close(1);
  CHECK(h.registry.connections("job") == 0);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test

namespace ddp::rendezvous::membership::test {
namespace {

TEST_CASE("a registry resumes a taken-over job at the recorded round", "[registry]") {
  Harness h;
  h.config.max_nodes = 2;
  h.registry = Registry({.resume = {{"job", {.round = 5, .restart_count = 2, .departures = 1}}}});
  h.join(1);
  const Events e = h.join(2);
  CHECK(only_for<RoundComplete>(e, 1).round == 5);
  CHECK(h.job().restart_count() == 2);
  CHECK(h.job().departures() == 1);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
