// Progress reports (docs/progress.md) and goodput (docs/goodput.md): what a job records of its
// ranks' steps, restarts that stop the job after rounds without a new best step, and the
// stepping time against the wall time.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

// Nodes 1 and 2 (two workers each: ranks 0-1 and 2-3) run round 1.
void start_two(Harness& h) {
  h.config.max_nodes = 2;
  h.join(1, 2);
  h.join(2, 2);
  REQUIRE(h.job().state() == Job::State::kRunning);
}

Progress steps(std::uint64_t round, std::int64_t step, std::uint64_t first_rank,
               Duration stepping = 0ms) {
  return Progress{round, stepping, {{first_rank, step, 1500us}, {first_rank + 1, step, 1500us}}};
}

// Rank 0 on node 1 fails in `round`; node 2 stops. Returns the events of the stop's end.
Events fail_round(Harness& h, std::uint64_t round) {
  h.send(1, ReportFailure{round, {failure(0, 3, 1'000'000)}});
  return h.send(2, WorkersStopped{round});
}

TEST_CASE("progress records each rank's step and step time, and the job's best step",
          "[progress]") {
  Harness h;
  start_two(h);
  CHECK_FALSE(h.job().steps().best_step().has_value());
  CHECK(h.send(1, steps(1, 5, 0)).empty());
  h.send(2, Progress{1, 0ms, {{2, 7, 900us}, {3, 6, 0us}}});
  CHECK(h.job().steps().best_step() == 7);
  REQUIRE(h.job().steps().ranks().size() == 4);
  CHECK(h.job().steps().ranks().at(0) == RankProgress{0, 5, 1500us});
  CHECK(h.job().steps().ranks().at(2) == RankProgress{2, 7, 900us});
  // Another node's ranks, and another round's reports, are not taken.
  h.send(1, Progress{1, 0ms, {{3, 100, 1us}}});
  h.send(2, steps(9, 100, 2));
  CHECK(h.job().steps().best_step() == 7);
  CHECK(h.job().steps().ranks().at(3).step == 6);
}

TEST_CASE("a progress report refreshes the sender's heartbeat", "[progress]") {
  Harness h;
  h.config.keep_alive_interval = 1s;  // budget 3 s
  start_two(h);
  for (int i = 0; i < 5; ++i) {
    CHECK(of_type<StopWorkers>(h.run_for(1s)).empty());
    h.send(1, steps(1, i, 0));
    h.heartbeat(2);
  }
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("restarts without a new step end the job with the no-progress exit code", "[progress]") {
  Harness h;
  h.config.max_restarts = 10;
  h.config.max_no_progress_restarts = 2;
  h.config.no_progress_exit_code = 93;
  start_two(h);
  // Round 1 never beats a step (the workers die first): restart 1, then round 2 likewise.
  CHECK(of_type<RoundComplete>(fail_round(h, 1)).size() == 2);
  CHECK(h.job().steps().no_progress_restarts() == 1);
  CHECK(of_type<RoundComplete>(fail_round(h, 2)).size() == 2);
  CHECK(h.job().steps().no_progress_restarts() == 2);
  // The third round without progress ends the job instead of a third such restart.
  const Events e = fail_round(h, 3);
  CHECK(of_type<RoundComplete>(e).empty());
  const JobFinished f = only_for<JobFinished>(e, 1);
  CHECK(f.exit_code == 93);
  CHECK(f.no_progress);
  CHECK_THAT(f.reason, Catch::Contains("no new step in the last 3 rounds"));
  CHECK_THAT(f.reason, Catch::Contains("max_no_progress_restarts 2"));
  REQUIRE(f.root_cause.has_value());
  CHECK(f.root_cause->exit_code == 3);  // the failure itself is still named
  CHECK(only_for<JobFinished>(e, 2) == f);
  CHECK(h.job().exit_code() == 93);
}

TEST_CASE("a round that passes the best step resets the count, one below it does not",
          "[progress]") {
  Harness h;
  h.config.max_restarts = 10;
  h.config.max_no_progress_restarts = 1;
  start_two(h);
  h.send(1, steps(1, 100, 0));
  fail_round(h, 1);  // progress: a restart, the count stays 0
  CHECK(h.job().steps().no_progress_restarts() == 0);
  h.send(1, steps(2, 80, 0));  // resumed from an older checkpoint: not beyond 100
  fail_round(h, 2);
  CHECK(h.job().steps().no_progress_restarts() == 1);
  h.send(2, steps(3, 101, 2));  // a new best step
  CHECK(of_type<RoundComplete>(fail_round(h, 3)).size() == 2);
  CHECK(h.job().steps().no_progress_restarts() == 0);
  // Steps that arrive after the stop began (the other node's last report) still count.
  h.send(1, ReportFailure{4, {failure(0, 3, 1'000'000)}});
  h.send(2, steps(4, 102, 2));
  CHECK(of_type<RoundComplete>(h.send(2, WorkersStopped{4})).size() == 2);
  CHECK(h.job().steps().no_progress_restarts() == 0);
  fail_round(h, 5);                   // no steps: the count reaches 1 ...
  const Events e = fail_round(h, 6);  // ... and the next such round ends the job
  CHECK(only_for<JobFinished>(e, 1).exit_code == 93);
}

TEST_CASE("without max_no_progress_restarts, rounds without steps restart as before",
          "[progress]") {
  Harness h;
  h.config.max_restarts = 3;
  start_two(h);
  for (std::uint64_t round = 1; round <= 3; ++round) {
    CHECK(of_type<RoundComplete>(fail_round(h, round)).size() == 2);
  }
  const JobFinished f = only_for<JobFinished>(fail_round(h, 4), 1);
  CHECK(f.exit_code == 3);
  CHECK_FALSE(f.no_progress);
  CHECK_THAT(f.reason, Catch::Contains("no restarts left"));
}

TEST_CASE("restarts that do not count (a node arriving) leave the no-progress count alone",
          "[progress]") {
  Harness h;
  h.config.max_restarts = 10;
  h.config.max_no_progress_restarts = 1;
  h.config.max_nodes = 3;
  h.join(1);
  h.join(2);
  h.run_for(h.config.last_call_timeout);
  fail_round(h, 1);
  CHECK(h.job().steps().no_progress_restarts() == 1);
  h.join(3);  // stops round 2 to admit it: not a failure
  h.send(1, WorkersStopped{2});
  CHECK(of_type<RoundComplete>(h.send(2, WorkersStopped{2})).size() == 3);
  CHECK(h.job().steps().no_progress_restarts() == 1);
  h.send(1, ReportFailure{3, {failure(0, 3, 1'000'000)}});
  h.send(2, WorkersStopped{3});
  CHECK(only_for<JobFinished>(h.send(3, WorkersStopped{3}), 1).exit_code == 93);
}

TEST_CASE("nodes must agree on the no-progress options", "[progress]") {
  Harness h;
  h.config.max_no_progress_restarts = 2;
  h.join(1);
  h.config.max_no_progress_restarts = 3;
  h.config.no_progress_exit_code = 94;
  const ErrorEvent e = only_for<ErrorEvent>(h.join(2), 2);
  CHECK(e.code == ErrorCode::kInvalidArgument);
  CHECK_THAT(e.message, Catch::Contains("max_no_progress_restarts 3 (this node) vs 2 (the job)"));
  CHECK_THAT(e.message, Catch::Contains("no_progress_exit_code 94 (this node) vs 93 (the job)"));
  Config bad;
  bad.no_progress_exit_code = 0;
  CHECK_THAT(validate(bad).message(), Catch::Contains("--no-progress-exit-code 1..255"));
}

TEST_CASE("goodput: each round's longest stepping time over the wall time since the first join",
          "[goodput]") {
  Harness h;
  const TimePoint created = h.now;
  start_two(h);
  h.now += 2s;
  h.send(1, steps(1, 10, 0, 3000ms));
  h.send(2, steps(1, 10, 2, 3500ms));  // the longest of the nodes' reports counts
  h.send(1, steps(1, 11, 0, 3200ms));
  h.now += 3s;
  CHECK(h.job().goodput(h.now) == Goodput{3500ms, 5000ms});
  fail_round(h, 1);
  h.now += 1s;
  h.send(2, steps(2, 20, 2, 1000ms));
  h.now += 1s;
  CHECK(h.job().goodput(h.now).stepping == 4500ms);
  h.send(1, ReportSuccess{2});
  const Events e = h.send(2, ReportSuccess{2});
  const JobFinished f = only_for<JobFinished>(e, 1);
  CHECK(f.exit_code == 0);
  CHECK(f.goodput == Goodput{4500ms, std::chrono::duration_cast<Duration>(h.now - created)});
  CHECK(f.goodput.ratio() == Approx(0.642857));
  // After the end the wall time stops.
  CHECK(h.job().goodput(h.now + 1h) == f.goodput);
  CHECK(h.job().view().steps.stepping == 4500ms);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
