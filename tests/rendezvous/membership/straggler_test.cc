// Straggler detection (docs/stragglers.md): a rank slower than the round's median by the
// factor for straggler_reports reports in a row is flagged once, with a Straggler event to its
// node; exclude_straggler removes that node like a lost one; the median's cost is bounded.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

// Nodes 1..n with two workers each (node k: ranks 2k-2, 2k-1) run round 1.
void start(Harness& h, NodeId n) {
  h.config.max_nodes = static_cast<std::uint32_t>(n);
  h.config.keep_alive_interval = 1s;
  for (NodeId id = 1; id <= n; ++id) h.join(id, 2);
  REQUIRE(h.job().state() == Job::State::kRunning);
}

// Node `id` reports step `step` for both its ranks; `slow_rank` (if it is one of them) took
// 3x as long per step as the others' 100 ms.
Events report(Harness& h, NodeId id, std::int64_t step, std::uint64_t slow_rank = ~0ull) {
  std::vector<RankProgress> ranks;
  for (std::uint64_t r = 2 * id - 2; r < 2 * id; ++r) {
    ranks.push_back({r, step, r == slow_rank ? 300'000us : 100'000us});
  }
  return h.send(id, Progress{1, 0ms, ranks});
}

// Every node of `n` reports `step`, one second apart from the previous call.
Events all_report(Harness& h, NodeId n, std::int64_t step, std::uint64_t slow_rank = ~0ull) {
  h.run_for(1s);
  Events out;
  for (NodeId id = 1; id <= n; ++id) {
    Events e = report(h, id, step, slow_rank);
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

TEST_CASE("a balanced job has no straggler", "[straggler]") {
  Harness h;
  start(h, 4);
  for (int step = 1; step <= 20; ++step) CHECK(of_type<Straggler>(all_report(h, 4, step)).empty());
  CHECK(h.job().steps().flagged_count() == 0);
  CHECK(h.job().steps().median() == 100'000us);
  CHECK(h.job().view().steps.stragglers == 0);
}

TEST_CASE("a rank 3x slower is flagged at its straggler_reports-th slow report, once",
          "[straggler]") {
  Harness h;
  h.config.straggler_reports = 5;
  start(h, 4);
  for (int step = 1; step <= 4; ++step)
    CHECK(of_type<Straggler>(all_report(h, 4, step, 5)).empty());
  const Events fifth = all_report(h, 4, 5, 5);
  const Straggler s = only_for<Straggler>(fifth, 3);  // rank 5 lives on node 3
  CHECK(s == Straggler{1, 5, 300'000us, 100'000us, 5, false});
  CHECK(of_type<Straggler>(fifth).size() == 1);
  for (int step = 6; step <= 10; ++step)
    CHECK(of_type<Straggler>(all_report(h, 4, step, 5)).empty());
  CHECK(h.job().steps().flagged(5));
  const StepView v = h.job().view().steps;
  CHECK(v.stragglers == 1);
  CHECK(v.median_step_time == 100'000us);
  CHECK(v.straggler_ranks == std::vector<RankStepView>{{5, 300'000us}});
  CHECK(h.job().state() == Job::State::kRunning);  // only flagged: exclude_straggler is off
}

TEST_CASE("a report without a new step does not count, a fast one clears the streak and flag",
          "[straggler]") {
  Harness h;
  h.config.straggler_reports = 3;
  start(h, 3);
  all_report(h, 3, 1, 5);
  all_report(h, 3, 2, 5);
  // The same step again, many times: not a new slow step.
  for (int i = 0; i < 5; ++i) CHECK(of_type<Straggler>(report(h, 3, 2, 5)).empty());
  CHECK(of_type<Straggler>(all_report(h, 3, 3, 5)).size() == 1);  // the third slow step
  CHECK(h.job().steps().flagged(5));
  all_report(h, 3, 4);  // rank 5 fast again
  CHECK_FALSE(h.job().steps().flagged(5));
  CHECK(h.job().steps().flagged_count() == 0);
  all_report(h, 3, 5, 5);
  all_report(h, 3, 6, 5);
  CHECK(of_type<Straggler>(all_report(h, 3, 7, 5)).size() == 1);  // flagged again
}

TEST_CASE("straggler factor 0 turns detection off", "[straggler]") {
  Harness h;
  h.config.straggler_factor_milli = 0;
  start(h, 2);
  for (int step = 1; step <= 10; ++step)
    CHECK(of_type<Straggler>(all_report(h, 2, step, 1)).empty());
  CHECK(h.job().steps().flagged_count() == 0);
}

TEST_CASE("straggler factor is a strict bound: 3x flags at 2.5, not at 3", "[straggler]") {
  for (const auto& [factor, flagged] : {std::pair{2500u, true}, std::pair{3000u, false}}) {
    Harness h;
    h.config.straggler_factor_milli = factor;
    h.config.straggler_reports = 1;
    start(h, 2);
    CHECK(of_type<Straggler>(all_report(h, 2, 1, 3)).size() == (flagged ? 1u : 0u));
  }
}

TEST_CASE("exclude_straggler removes the straggler's node like a lost node", "[straggler]") {
  Harness h;
  h.config.straggler_reports = 2;
  h.config.exclude_straggler = true;
  start(h, 3);
  all_report(h, 3, 1, 4);  // rank 4: node 3
  const Events e = all_report(h, 3, 2, 4);
  CHECK(only_for<Straggler>(e, 3).removed);
  const ErrorEvent gone = only_for<ErrorEvent>(e, 3);
  CHECK(gone.code == ErrorCode::kPeerGone);
  CHECK_THAT(gone.message, Catch::Contains("persistent straggler"));
  CHECK_THAT(gone.message, Catch::Contains("step time over 2x the median in 2 reports"));
  CHECK_FALSE(h.job().has_node(3));
  REQUIRE(h.job().removal(3) != nullptr);
  for (NodeId id : {NodeId{1}, NodeId{2}})
    CHECK(only_for<StopWorkers>(e, id).reason == StopReason::kNodeLost);
  CHECK(h.job().state() == Job::State::kStopping);
  // The survivors re-form without it; the new round starts with no straggler.
  h.send(1, WorkersStopped{1});
  h.send(2, WorkersStopped{1});
  CHECK(h.job().state() == Job::State::kRunning);
  CHECK(h.job().round() == 2);
  CHECK(h.job().steps().flagged_count() == 0);
}

TEST_CASE("straggler median is recomputed at most once per second, not per report", "[straggler]") {
  Harness h;
  constexpr NodeId kNodes = 300;
  h.config.max_nodes = kNodes;
  h.config.keep_alive_interval = 1s;
  for (NodeId id = 1; id <= kNodes; ++id) h.join(id, 2);
  REQUIRE(h.job().state() == Job::State::kRunning);
  for (int step = 1; step <= 3; ++step) {
    h.run_for(1s);
    const std::uint64_t before = h.job().visits();
    for (NodeId id = 1; id <= kNodes; ++id) report(h, id, step);
    // A few visits per report (its 2 ranks, the heartbeat queue), and at most one scan of the
    // 600 ranks for the median; a scan per report would be ~180,000 visits.
    CHECK(h.job().visits() - before <= 4 * kNodes + 2 * kNodes);
  }
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
