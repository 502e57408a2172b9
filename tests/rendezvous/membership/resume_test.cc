// A job taken over by a new daemon (the etcd backend's new host after the old one was lost):
// it continues the round numbers, restart count and departures it is given, and forms its
// first round as soon as the expected survivors are back.
#include <catch2/catch.hpp>

#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

TEST_CASE("a resumed job continues the round numbers and the restart count", "[resume]") {
  Harness h;  // MIN 2, MAX 4
  Job job("job", h.config, false, h.now);
  job.resume({.round = 7, .restart_count = 2, .departures = 1, .expected_nodes = 2});
  Events out;
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  CHECK(job.state() == Job::State::kPending);
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  // Both survivors back: no last call.
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

TEST_CASE("expected survivors below MIN wait for MIN", "[resume]") {
  Harness h;  // MIN 2, MAX 4
  Job job("job", h.config, false, h.now);
  job.resume({.round = 3, .expected_nodes = 1});
  Events out;
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  CHECK(job.state() == Job::State::kPending);  // 1 expected, but MIN is 2
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(job.round() == 3);
}

TEST_CASE("without expected nodes a resumed job waits for the last call", "[resume]") {
  Harness h;
  Job job("job", h.config, false, h.now);
  job.resume({.round = 4});
  Events out;
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  CHECK(job.state() == Job::State::kPending);
  CHECK(of_type<RoundComplete>(out).empty());
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
