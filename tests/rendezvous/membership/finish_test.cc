// The end of a job: the exit barrier, closing, late joiners, retention of finished jobs.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

void start(Harness& h, int n) {
  h.config.max_nodes = static_cast<std::uint32_t>(n);
  for (int i = 1; i <= n; ++i) h.join(static_cast<NodeId>(i));
  REQUIRE(h.job().state() == Job::State::kRunning);
}

TEST_CASE("exit barrier: everyone is told to exit 0 once the last node succeeds", "[finish]") {
  Harness h;
  start(h, 3);
  CHECK(h.send(1, ReportSuccess{1}).empty());
  CHECK(h.send(3, ReportSuccess{1}).empty());
  CHECK(h.send(3, ReportSuccess{1}).empty());  // a repeat is harmless
  const Events e = h.send(2, ReportSuccess{1});
  REQUIRE(of_type<JobFinished>(e).size() == 3);
  for (NodeId id : {1, 2, 3}) {
    const JobFinished f = only_for<JobFinished>(e, id);
    CHECK(f.exit_code == 0);
    CHECK_FALSE(f.root_cause);
  }
  CHECK(h.job().state() == Job::State::kFinished);
  CHECK_FALSE(h.job().root_cause());
  CHECK(h.registry.next_deadline() == h.now + RegistryOptions{}.finished_retention);
}

TEST_CASE("exit barrier: a failure releases the nodes already waiting in it", "[finish]") {
  Harness h;
  h.config.max_restarts = 0;
  start(h, 2);
  h.send(1, ReportSuccess{1});
  // Node 1 waits at the barrier; node 2 fails. Node 1 has nothing to stop, so nobody waits.
  const Events e = h.send(2, ReportFailure{1, {failure(1, 7, 10)}});
  CHECK(only_for<StopWorkers>(e, 1).reason == StopReason::kWorkerFailed);
  const JobFinished f = only_for<JobFinished>(e, 1);
  CHECK(f.exit_code == 7);
  CHECK(f == only_for<JobFinished>(e, 2));
}

TEST_CASE("a node that leaves after succeeding is not a loss", "[finish]") {
  Harness h;
  start(h, 2);
  h.send(1, ReportSuccess{1});
  CHECK(h.close(1).empty());
  const Events e = h.send(2, ReportSuccess{1});
  CHECK(only_for<JobFinished>(e, 2).exit_code == 0);
  CHECK(h.job().restart_count() == 0);
}

TEST_CASE("waiting nodes are told when the job finishes", "[finish]") {
  Harness h;
  start(h, 2);  // MAX = 2, so node 3 only waits
  h.join(3);
  h.send(1, ReportSuccess{1});
  const Events e = h.send(2, ReportSuccess{1});
  CHECK(of_type<JobFinished>(e).size() == 3);
  CHECK(only_for<JobFinished>(e, 3).exit_code == 0);
}

TEST_CASE("a late joiner after the end gets a clear job-finished error", "[finish]") {
  Harness h;
  start(h, 2);
  h.send(1, ReportSuccess{1});
  h.send(2, ReportSuccess{1});
  const ErrorEvent err = only_for<ErrorEvent>(h.join(9), 9);
  CHECK(err.code == ErrorCode::kJobFinished);
  CHECK_THAT(err.message,
             Catch::Contains("job 'job' finished") && Catch::Contains("different --rdzv-id"));
  // Once the retention is over the run id is free again.
  h.run_for(RegistryOptions{}.finished_retention);
  CHECK(h.registry.find("job") == nullptr);
  CHECK(only_for<Joined>(h.join(9), 9) == Joined{1, false});
}

TEST_CASE("everyone leaving before the first round frees the run id", "[finish]") {
  Harness h;
  h.join(1);
  h.send(1, Leave{"SIGTERM"});
  CHECK(h.registry.find("job") == nullptr);
  CHECK(h.registry.next_deadline() == std::nullopt);
}

TEST_CASE("requests after the end are ignored", "[finish]") {
  Harness h;
  start(h, 2);
  h.send(1, ReportSuccess{1});
  h.send(2, ReportSuccess{1});
  CHECK(h.heartbeat(1).empty());
  CHECK(h.send(1, ReportFailure{1, {failure(0, 1, 1)}}).empty());
  CHECK(h.close(2).empty());
  CHECK(h.job().exit_code() == 0);
}

// A worker judged hung by its agent: failure time = its last beat as that agent read it.
Failure hung(std::uint32_t rank, std::optional<std::int64_t> step, std::int64_t last_beat_us) {
  Failure f = failure(rank, 124, last_beat_us);
  f.hung = true;
  f.step = step;
  return f;
}

TEST_CASE("the root cause among hung workers is the lowest step, whatever the read order",
          "[finish]") {
  // Node b's rank 1 stalled at step 4; node a's rank 0 beat step 5, then blocked in the
  // collective waiting for it. Node b's agent, starved, read rank 1's last beat after node a's
  // agent read rank 0's (seen under load: rank 0 was blamed).
  const Failure stalled = hung(1, 4, 2'000'050);
  const Failure waiting = hung(0, 5, 2'000'000);
  CHECK(root_cause_of({waiting, stalled})->rank == 1);
  CHECK(root_cause_of({stalled, waiting})->rank == 1);
  // Same step: the earlier last beat; then the lower rank. No step (never beat one) first.
  CHECK(root_cause_of({hung(3, 4, 9), hung(2, 4, 10)})->rank == 3);
  CHECK(root_cause_of({hung(3, 4, 10), hung(2, 4, 10)})->rank == 2);
  CHECK(root_cause_of({hung(3, 4, 1), hung(2, std::nullopt, 10)})->rank == 2);
  // A crash competes with the first hung worker by time.
  CHECK(root_cause_of({waiting, stalled, failure(7, 1, 1'000'000)})->rank == 7);
  CHECK(root_cause_of({waiting, stalled, failure(7, 1, 3'000'000)})->rank == 1);
  CHECK_FALSE(root_cause_of({}));
}

TEST_CASE("the job's root cause is the hung worker that got least far, as every node is told",
          "[finish]") {
  Harness h;
  h.config.max_restarts = 0;
  start(h, 2);
  // Node 1 noticed first (its worker at step 5); node 2 judged its silent worker at the stop.
  h.send(1, ReportFailure{1, {hung(0, 5, 2'000'000)}});
  const Events e = h.send(2, ReportFailure{1, {hung(1, 4, 2'000'050)}});
  for (NodeId id : {1, 2}) {
    const auto finished = only_for<JobFinished>(e, id);
    REQUIRE(finished.root_cause);
    CHECK(finished.root_cause->rank == 1);
    CHECK(finished.exit_code == 124);
  }
}

TEST_CASE("the failed job's exit code follows the root cause", "[finish]") {
  auto code = [](std::int32_t exit_code) { return failure_exit_code(failure(0, exit_code, 1)); };
  CHECK(code(3) == 3);
  CHECK(code(255) == 255);
  CHECK(code(-9) == 137);   // SIGKILL, as a shell reports it
  CHECK(code(-15) == 143);  // SIGTERM
  CHECK(code(0) == 1);      // a "failure" that exited 0 still fails the job
  CHECK(code(300) == 1);
  CHECK(failure_exit_code(std::nullopt) == 1);  // e.g. a node lost with no restarts left
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
