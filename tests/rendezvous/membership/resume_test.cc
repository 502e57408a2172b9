// A job taken over by a new daemon (the etcd backend's new host after the old one was lost):
// it continues the round numbers, restart count and departures it is given, forms its first
// round as soon as the expected survivors are back, gives them their group ranks, and goes on
// with the progress and goodput it is given.
#include "tests/catch.h"
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

TEST_CASE("a resumed job's survivors keep their group ranks, a newcomer takes the lost one's",
          "[resume]") {
  Harness h;
  h.config.min_nodes = h.config.max_nodes = 3;
  Job job("job", h.config, false, h.now);
  // host-1 hosted the lost daemon at group rank 0; host-9 left earlier ("").
  job.resume({.round = 5, .expected_nodes = 2, .ranks = {"host-1", "host-3", "host-2", ""}});
  Events out;
  // The spare joins first: in join order it would take rank 0, the survivors 1 and 2.
  for (NodeId id : {4, 2, 3}) job.join(id, Harness::info(id), std::nullopt, h.now, out);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(only_for<RoundComplete>(out, 3).group_rank == 1);
  CHECK(only_for<RoundComplete>(out, 2).group_rank == 2);
  CHECK(only_for<RoundComplete>(out, 4).group_rank == 0);
  CHECK(only_for<RoundComplete>(out, 4).rank_offset == 0);
  // Two spares, then host-2 lost: the resume's ranks are spent, so host-1 (a key of theirs)
  // is a newcomer after host-5, which takes the free rank.
  out.clear();
  job.join(5, Harness::info(5), std::nullopt, h.now, out);
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  job.remove_node(2, GoneReason::kLeft, "", h.now, out);
  job.workers_stopped(3, 5, h.now, out);
  job.workers_stopped(4, 5, h.now, out);
  REQUIRE(job.round() == 6);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(only_for<RoundComplete>(out, 4).group_rank == 0);
  CHECK(only_for<RoundComplete>(out, 3).group_rank == 1);
  CHECK(only_for<RoundComplete>(out, 5).group_rank == 2);
  CHECK(of_type<RoundComplete>(out).size() == 3);  // host-1 waits
}

TEST_CASE("a resumed job with ranks waits for its survivors by key, even at MAX", "[resume]") {
  Harness h;
  h.config.max_nodes = 3;  // MIN 2
  Job job("job", h.config, false, h.now);
  // The old host left its own key out: host-2 and host-3 are expected.
  job.resume({.round = 5, .expected_nodes = 2, .ranks = {"", "host-2", "host-3"}});
  Events out;
  job.join(4, Harness::info(4), std::nullopt, h.now, out);  // two spares first
  job.join(5, Harness::info(5), std::nullopt, h.now, out);
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  job.remove_node(2, GoneReason::kConnectionClosed, "", h.now, out);  // host-2 goes and ...
  job.join(3, Harness::info(3), std::nullopt, h.now, out);
  CHECK(job.state() == Job::State::kPending);  // MAX joined, one survivor back
  NodeInfo again = Harness::info(2);           // ... comes back on a new connection
  job.join(12, again, std::nullopt, h.now, out);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(only_for<RoundComplete>(out, 4).group_rank == 0);
  CHECK(only_for<RoundComplete>(out, 12).group_rank == 1);
  CHECK(only_for<RoundComplete>(out, 3).group_rank == 2);
  CHECK(of_type<RoundComplete>(out).size() == 3);  // host-5 stays a spare
}

TEST_CASE("a survivor that does not come back is given up at the last call", "[resume]") {
  Harness h;
  h.config.max_nodes = 3;  // MIN 2, last call 5 s
  Job job("job", h.config, false, h.now);
  job.resume({.round = 5, .expected_nodes = 2, .ranks = {"", "host-2", "host-3"}});
  Events out;
  for (NodeId id : {4, 5, 3}) job.join(id, Harness::info(id), std::nullopt, h.now, out);
  REQUIRE(job.next_deadline() == h.now + 5s);
  job.on_deadline(h.now + 5s, out);
  REQUIRE(job.state() == Job::State::kRunning);
  CHECK(only_for<RoundComplete>(out, 4).group_rank == 0);
  CHECK(only_for<RoundComplete>(out, 5).group_rank == 1);
  CHECK(only_for<RoundComplete>(out, 3).group_rank == 2);
}

TEST_CASE("a resumed elastic job waits for the spares that were waiting, then the last call",
          "[resume]") {
  Harness h;
  h.config.max_nodes = 3;  // MIN 2, last call 5 s
  Job job("job", h.config, false, h.now);
  // host-1 hosted at group rank 0 and was lost; one spare waited.
  job.resume({.round = 5, .expected_nodes = 2, .spares = 1, .ranks = {"", "host-2", "host-3"}});
  Events out;
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  job.join(3, Harness::info(3), std::nullopt, h.now, out);
  // Both survivors back and MIN met: without the spare this round would have 2 nodes, and
  // host-3 would move down to rank 0.
  CHECK(job.state() == Job::State::kPending);
  SECTION("the spare comes: the round forms at once, the survivors keep their ranks") {
    job.join(4, Harness::info(4), std::nullopt, h.now, out);
    REQUIRE(job.state() == Job::State::kRunning);
    CHECK(only_for<RoundComplete>(out, 4).group_rank == 0);
    CHECK(only_for<RoundComplete>(out, 2).group_rank == 1);
    CHECK(only_for<RoundComplete>(out, 3).group_rank == 2);
  }
  SECTION("the spare does not come: the last call forms the round without it") {
    REQUIRE(job.next_deadline() == h.now + 5s);
    job.on_deadline(h.now + 5s, out);
    REQUIRE(job.state() == Job::State::kRunning);
    CHECK(of_type<RoundComplete>(out).size() == 2);
  }
}

TEST_CASE("a resumed job's progress and goodput go on", "[resume][progress]") {
  Harness h;
  h.config.max_nodes = 2;
  h.config.max_no_progress_restarts = 3;
  Job job("job", h.config, false, h.now);
  job.resume({.round = 4,
              .expected_nodes = 2,
              .best_step = 100,
              .no_progress_restarts = 1,
              .stepping = 40s,
              .age = 100s});
  CHECK(job.steps().best_step() == 100);
  CHECK(job.goodput(h.now) == Goodput{40s, 100s});
  Events out;
  job.join(1, Harness::info(1), std::nullopt, h.now, out);
  job.join(2, Harness::info(2), std::nullopt, h.now, out);
  REQUIRE(job.state() == Job::State::kRunning);
  // Steps below the best before the move are no progress: the streak goes on from 1.
  job.progress(1, 4, 10s, {{0, 90, 1ms}}, h.now + 20s, out);
  CHECK(job.goodput(h.now + 20s) == Goodput{50s, 120s});
  job.report_failure(1, 4, {failure(0, 3, 1)}, h.now + 20s, out);
  job.workers_stopped(2, 4, h.now + 20s, out);
  REQUIRE(job.round() == 5);
  CHECK(job.steps().no_progress_restarts() == 2);
  // What a successor of this daemon resumes from.
  const ResumePoint next = job.resume_point(h.now + 30s);
  CHECK(next.round == 6);
  CHECK(next.restart_count == 1);
  CHECK(next.ranks == std::vector<std::string>{"host-1", "host-2"});
  CHECK(next.best_step == 100);
  CHECK(next.no_progress_restarts == 2);
  CHECK(next.stepping == 50s);
  CHECK(next.age == 130s);
  // A step above the best is progress: the streak ends at the next stop.
  job.progress(2, 5, 1s, {{1, 101, 1ms}}, h.now + 31s, out);
  job.report_failure(1, 5, {failure(0, 3, 1)}, h.now + 31s, out);
  job.workers_stopped(2, 5, h.now + 31s, out);
  CHECK(job.steps().no_progress_restarts() == 0);
  CHECK(job.steps().best_step() == 101);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
