// A job taken over by a new coordinator (the etcd backend): it resumes at the next round with
// the recorded restart count and departures, and completes the round at once with the nodes
// present.
#include <catch2/catch.hpp>

#include "tests/membership/harness.h"

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

}  // namespace
}  // namespace ddp::rendezvous::membership::test
