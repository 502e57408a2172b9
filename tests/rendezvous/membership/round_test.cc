// Forming a round: completion at MAX, last call after MIN, join timeout, rank assignment and
// the worker-store address, config checks.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

TEST_CASE("a round completes at once when MAX nodes have joined", "[round]") {
  Harness h;
  CHECK(only_for<Joined>(h.join(1), 1) == Joined{1, false});
  h.join(2);
  h.join(3);
  CHECK(h.job().state() == Job::State::kPending);
  const Events e = h.join(4);
  CHECK(h.job().state() == Job::State::kRunning);
  const auto rc = of_type<RoundComplete>(e);
  REQUIRE(rc.size() == 4);
  for (std::uint32_t i = 0; i < 4; ++i) {
    CHECK(rc[i].first == i + 1);  // join order
    CHECK(rc[i].second == RoundComplete{1, 0, i, 4, 1, i, 4, "10.0.0.1", 29501});
  }
}

TEST_CASE("after MIN nodes the round completes last_call_timeout later", "[round]") {
  Harness h;
  h.join(1);
  // Below MIN: the heartbeat budget (30 s), then the join bound (60 s); no last call.
  CHECK(h.registry.next_deadline() == h.now + h.config.heartbeat_budget());
  h.join(2);
  const TimePoint last_call = h.now + h.config.last_call_timeout;
  CHECK(h.registry.next_deadline() == last_call);
  h.run_for(2s);
  h.join(3);  // a later join does not extend the last call
  CHECK(h.run_until(last_call - 1ms).empty());
  const Events e = h.run_until(last_call);
  CHECK(of_type<RoundComplete>(e).size() == 3);
  CHECK(only_for<RoundComplete>(e, 3).group_world_size == 3);
  CHECK(h.job().round() == 1);
}

TEST_CASE("a forming round tells an asking node how far it is", "[round]") {
  Harness h;  // MIN 2, MAX 4, join timeout 60 s, last call 5 s
  h.join(1);
  h.now += 10s;
  CHECK(only_for<Waiting>(h.send(1, QueryWaiting{}), 1) == Waiting{1, 2, 4, 50s, std::nullopt});
  h.join(2);
  h.now += 2s;
  CHECK(only_for<Waiting>(h.send(2, QueryWaiting{}), 2) == Waiting{2, 2, 4, 48s, 3s});
  h.join(3);
  h.join(4);  // MAX: the round forms; nothing more to tell
  REQUIRE(h.job().state() == Job::State::kRunning);
  CHECK(h.send(1, QueryWaiting{}).empty());
}

TEST_CASE("dropping below MIN cancels the last call", "[round]") {
  Harness h;
  h.join(1);
  h.join(2);
  h.close(2);
  CHECK(h.run_for(h.config.last_call_timeout + 1s).empty());
  CHECK(h.job().state() == Job::State::kPending);
  h.join(3);  // MIN again: a fresh last call from now
  const Events e = h.run_for(h.config.last_call_timeout);
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 1);
  CHECK(only_for<RoundComplete>(e, 1).group_rank == 0);
}

TEST_CASE("join timeout below MIN is an error to every waiter and ends the job", "[round]") {
  Harness h;
  h.join(1);
  const TimePoint timeout = h.now + h.config.join_timeout;
  for (int i = 0; i < 59; ++i) {  // node 1 stays alive all along
    h.run_for(1s);
    h.heartbeat(1);
  }
  CHECK(h.run_until(timeout - 1ms).empty());
  const Events e = h.run_until(timeout);
  const ErrorEvent err = only_for<ErrorEvent>(e, 1);
  CHECK(err.code == ErrorCode::kTimeout);
  CHECK_THAT(err.message, Catch::Contains("1 of min 2") && Catch::Contains("join_timeout"));
  CHECK(h.job().state() == Job::State::kFinished);
}

TEST_CASE("MIN reached at the join timeout completes the round", "[round]") {
  Harness h;
  h.config.last_call_timeout = 120s;  // longer than join_timeout: the join bound decides
  h.join(1);
  h.join(2);
  for (int i = 0; i < 60; ++i) {
    h.run_for(1s);
    h.heartbeat(1);
    h.heartbeat(2);
  }
  CHECK(h.job().state() == Job::State::kRunning);
}

TEST_CASE("the group-rank-0 node's address and port go to every node", "[round]") {
  Harness h;
  h.config.min_nodes = h.config.max_nodes = 3;
  h.join(7, 2);
  h.join(3, 1);
  const Events e = h.join(5, 4);
  for (NodeId id : {7, 3, 5}) {
    const RoundComplete rc = only_for<RoundComplete>(e, id);
    CHECK(rc.store_addr == "10.0.0.7");
    CHECK(rc.store_port == 29507);
    CHECK(rc.world_size == 7);
  }
  CHECK(only_for<RoundComplete>(e, 7).rank_offset == 0);
  CHECK(only_for<RoundComplete>(e, 3).rank_offset == 2);
  CHECK(only_for<RoundComplete>(e, 5).rank_offset == 3);
  CHECK(only_for<RoundComplete>(e, 5).local_world_size == 4);
}

TEST_CASE("a JOIN with another configuration is refused, naming the difference", "[round]") {
  Harness h;
  h.join(1);
  h.config.min_nodes = 3;
  const ErrorEvent err = only_for<ErrorEvent>(h.join(2), 2);
  CHECK(err.code == ErrorCode::kInvalidArgument);
  CHECK_THAT(err.message, Catch::Contains("min_nodes 3 (this node) vs 2 (the job)"));
  CHECK(h.job().node_count() == 1);
}

TEST_CASE("invalid JOINs are refused with the fix", "[round]") {
  Harness h;
  h.config.min_nodes = 5;
  CHECK_THAT(only_for<ErrorEvent>(h.join(1), 1).message, Catch::Contains("--nnodes MIN:MAX"));
  h.config.min_nodes = 1;
  CHECK_THAT(only_for<ErrorEvent>(h.join(1, 0), 1).message, Catch::Contains("--nproc-per-node"));
  CHECK_THAT(only_for<ErrorEvent>(h.join(1, 1, ""), 1).message, Catch::Contains("--rdzv-id"));
  h.config.keep_alive_interval = 0s;
  CHECK_THAT(only_for<ErrorEvent>(h.join(1), 1).message, Catch::Contains("keep_alive_interval"));
  CHECK(h.registry.jobs().size() == 0);
}

TEST_CASE("a second JOIN on one connection is refused", "[round]") {
  Harness h;
  h.join(1);
  CHECK_THAT(only_for<ErrorEvent>(h.join(1), 1).message, Catch::Contains("already joined"));
  CHECK(h.job().node_count() == 1);
}

TEST_CASE("requests before JOIN are refused", "[round]") {
  Harness h;
  CHECK_THAT(only_for<ErrorEvent>(h.send(9, ReportSuccess{1}), 9).message,
             Catch::Contains("send JOIN"));
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
