// The end of a job: the exit barrier, closing, late joiners, retention of finished jobs.
#include <catch2/catch.hpp>

#include "tests/membership/harness.h"

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
