// 4000 nodes through a whole job: the work per request must not grow with the job. Checked
// two ways: events are linear (no per-join broadcast), and the time is far under the bound.
#include <catch2/catch.hpp>
#include <chrono>

#include "tests/membership/harness.h"

namespace ddp::membership::test {
namespace {

// Runs a K-node job: K joins, K heartbeats, K successes. Returns the number of events and
// the wall time taken.
std::pair<std::size_t, std::chrono::nanoseconds> run_job(std::uint32_t k) {
  Harness h;
  h.config.min_nodes = h.config.max_nodes = k;
  std::size_t events = 0;
  const auto start = std::chrono::steady_clock::now();
  for (NodeId id = 1; id <= k; ++id) events += h.join(id, 8).size();
  REQUIRE(h.job().state() == Job::State::kRunning);
  h.now += 1s;
  for (NodeId id = 1; id <= k; ++id) events += h.heartbeat(id).size();
  for (NodeId id = 1; id <= k; ++id) events += h.send(id, ReportSuccess{1}).size();
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(h.job().state() == Job::State::kFinished);
  return {events, took};
}

TEST_CASE("4000 nodes: linear events and well under a second", "[scale]") {
  const auto [events, took] = run_job(4000);
  CHECK(events == 3 * 4000);  // Joined + RoundComplete + JobFinished per node, nothing more
  const double ms = std::chrono::duration<double, std::milli>(took).count();
  INFO("4000-node job took " << ms << " ms");
  CHECK(ms < 1000.0);
}

TEST_CASE("16000 nodes take far less than 16x the time of 4000 would if quadratic",
          "[scale]") {
  // Best of three to damp noise from the other processes on this machine. Quadratic work
  // would make the ratio ~16; linear (n log n for the one sort) ~4. Bound: 9.
  auto best = [](std::uint32_t k) {
    auto t = run_job(k).second;
    for (int i = 0; i < 2; ++i) t = std::min(t, run_job(k).second);
    return std::chrono::duration<double>(t).count();
  };
  const double small = best(4000);
  const double large = best(16000);
  INFO("4000: " << small * 1e3 << " ms, 16000: " << large * 1e3 << " ms");
  CHECK(large / small < 9.0);
}

}  // namespace
}  // namespace ddp::membership::test
