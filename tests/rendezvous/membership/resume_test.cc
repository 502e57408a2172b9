// A job taken over by a new coordinator (the etcd backend): it resumes at the next round with
// the recorded restart count and departures, and completes the round at once with the nodes
// present.
#include <catch2/catch.hpp>

#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

TEST_CASE("a resumed job continues the round numbers and the restart count", "[resume]") {
  Harness h;
  Job job("job", h.config, false, h.now);
  job.resume(7, 2, 1);
  Events out;
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  CHECK(job.state() == Job::State::kPending);  // 2 of MIN 2..MAX 4: a last call would follow
  out.clear();
  job.complete_if_ready(h.now, out);
  REQUIRE(job.state() == Job::State::kRunning);
  auto rounds = of_type<RoundComplete>(out);
  REQUIRE(rounds.size() == 2);
  for (const auto& [id, r] : rounds) {
    CHECK(r.round == 7);
    CHECK(r.restart_count == 2);
  }
  CHECK(job.departures() == 1);
  // A failure counts from the recorded count: max_restarts 3 allows one more.
  out.clear();
  job.report_failure(1, 7, {failure(0, 3, 1)}, h.now, out);
  job.workers_stopped(2, 7, h.now, out);
  CHECK(job.restart_count() == 3);
  CHECK(job.round() == 8);
}

TEST_CASE("complete_if_ready does nothing below MIN or once running", "[resume]") {
  Harness h;
  Job job("job", h.config, false, h.now);
  Events out;
  job.complete_if_ready(h.now, out);
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  job.complete_if_ready(h.now, out);
  CHECK(job.state() == Job::State::kPending);
  CHECK(of_type<RoundComplete>(out).empty());
}

// The etcd coordinator died while round 5 ran; nodes 1 and 3 remain, node 2 (the old
// coordinator) is gone. Its successor resumes round 5 running and replays what happened.
TEST_CASE("a failure reported while the coordinator was replaced uses one restart", "[resume]") {
  Harness h;
  Job job("job", h.config, false, h.now);
  job.resume_running(5, 1, 0, {{1, Harness::info(1)}, {2, Harness::info(2)}, {3, Harness::info(3)}},
                     h.now);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(job.node_count() == 3);
  Events out;
  job.report_failure(3, 5, {failure(2, 3, 1)}, h.now, out);  // before the loss: counted
  CHECK(job.restart_count() == 2);
  CHECK(of_type<StopWorkers>(out).size() == 3);
  job.remove_node(2, GoneReason::kConnectionClosed, "lease expired", h.now, out);
  CHECK(job.departures() == 0);  // a loss during the stop is part of it
  out.clear();
  job.workers_stopped(1, 5, h.now, out);
  auto rounds = of_type<RoundComplete>(out);
  REQUIRE(rounds.size() == 2);
  for (const auto& [id, r] : rounds) {
    CHECK(r.round == 6);
    CHECK(r.restart_count == 2);
    CHECK(r.group_world_size == 2);
  }
  CHECK(job.roster() == std::vector<NodeId>{1, 3});  // survivors keep their order
}

TEST_CASE("a coordinator lost while its round ran is a departure, no restart", "[resume]") {
  Harness h;
  Job job("job", h.config, false, h.now);
  job.resume_running(3, 0, 1, {{7, Harness::info(7)}, {8, Harness::info(8)}, {9, Harness::info(9)}},
                     h.now);
  Events out;
  job.remove_node(7, GoneReason::kConnectionClosed, "lease expired", h.now, out);
  CHECK(job.departures() == 2);
  CHECK(job.restart_count() == 0);
  auto stops = of_type<StopWorkers>(out);
  REQUIRE(stops.size() == 2);
  CHECK(stops[0].second.reason == StopReason::kNodeLost);
  // A failure after the loss belongs to that stop: recorded, not counted.
  job.report_failure(8, 3, {failure(1, 3, 1)}, h.now, out);
  job.workers_stopped(9, 3, h.now, out);
  CHECK(job.restart_count() == 0);
  CHECK(job.round() == 4);
  CHECK(job.state() == Job::State::kRunning);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
