// Pinned node ranks (static rendezvous, --node-rank): the group rank is the pinned one whatever
// the join order, the round waits for all N nodes, and bad pins get a clear error while the
// job goes on for the others.
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

struct StaticHarness : Harness {
  explicit StaticHarness(std::uint32_t nodes = 3) {
    config.min_nodes = nodes;
    config.max_nodes = nodes;
    config.max_restarts = 1;
  }
  Events join_at(NodeId id, std::uint32_t node_rank, std::uint32_t local_world_size = 1,
                 std::optional<Config> other_config = std::nullopt) {
    JoinRequest r{"job", other_config.value_or(config), info(id, local_world_size), node_rank};
    return registry.handle(id, std::move(r), now);
  }
};

std::string error_for(const Events& e, NodeId id) { return only_for<ErrorEvent>(e, id).message; }

TEST_CASE("pinned ranks: group rank = node rank whatever the join order", "[static]") {
  StaticHarness h;
  // Node rank 2 joins first, then 0, then 1; different worker counts.
  CHECK(only_for<Joined>(h.join_at(1, 2, 1), 1) == Joined{1, false});
  h.join_at(2, 0, 3);
  const Events e = h.join_at(3, 1, 2);
  REQUIRE(of_type<RoundComplete>(e).size() == 3);
  CHECK(only_for<RoundComplete>(e, 2) == RoundComplete{1, 0, 0, 3, 3, 0, 6, "10.0.0.2", 29502});
  CHECK(only_for<RoundComplete>(e, 3) == RoundComplete{1, 0, 1, 3, 2, 3, 6, "10.0.0.2", 29502});
  CHECK(only_for<RoundComplete>(e, 1) == RoundComplete{1, 0, 2, 3, 1, 5, 6, "10.0.0.2", 29502});
  CHECK(h.job().pinned_ranks());
}

TEST_CASE("pinned ranks: the round waits for every node, no last call", "[static]") {
  StaticHarness h;
  h.join_at(1, 0);
  h.join_at(2, 1);
  CHECK(of_type<RoundComplete>(h.run_for(h.config.last_call_timeout + 1s)).empty());
  CHECK(h.job().state() == Job::State::kPending);
  CHECK(of_type<RoundComplete>(h.join_at(3, 2)).size() == 3);
}

TEST_CASE("pinned ranks: a rank at or above the node count is refused", "[static]") {
  StaticHarness h;
  h.join_at(1, 0);
  const Events e = h.join_at(2, 3);
  const std::string message = error_for(e, 2);
  CHECK_THAT(message, Catch::Contains("node rank 3"));
  CHECK_THAT(message, Catch::Contains("3 nodes"));
  CHECK_THAT(message, Catch::Contains("--node-rank 0..2"));
  CHECK(only_for<ErrorEvent>(e, 2).code == ErrorCode::kInvalidArgument);
  CHECK_FALSE(h.job().has_node(2));
  h.join_at(3, 1);
  CHECK(of_type<RoundComplete>(h.join_at(4, 2)).size() == 3);  // the job goes on
}

TEST_CASE("pinned ranks: a rank at or above the node count is refused as the first JOIN too",
          "[static]") {
  StaticHarness h;
  CHECK_THAT(error_for(h.join_at(1, 7), 1), Catch::Contains("--node-rank 0..2"));
  CHECK(h.registry.find("job") == nullptr);  // nothing left behind
}

TEST_CASE("pinned ranks: two nodes claiming one rank, the second is refused", "[static]") {
  StaticHarness h;
  h.join_at(1, 1);
  const std::string message = error_for(h.join_at(2, 1), 2);
  CHECK_THAT(message, Catch::Contains("node rank 1"));
  CHECK_THAT(message, Catch::Contains("already taken by node host-1"));
  CHECK_THAT(message, Catch::Contains("--node-rank"));
  CHECK(h.job().node_count() == 1);
  h.join_at(3, 0);
  const Events e = h.join_at(4, 2);
  CHECK(only_for<RoundComplete>(e, 1).group_rank == 1);
}

TEST_CASE("pinned ranks: a rank is free again once its holder is gone", "[static]") {
  StaticHarness h;
  h.join_at(1, 0);
  h.close(1);  // e.g. the agent was restarted before the others came
  h.join_at(2, 1);
  CHECK(of_type<ErrorEvent>(h.join_at(3, 0)).empty());
  const Events e = h.join_at(4, 2);
  CHECK(only_for<RoundComplete>(e, 3).group_rank == 0);
  CHECK(only_for<RoundComplete>(e, 3).store_addr == "10.0.0.3");
}

TEST_CASE("pinned ranks: nodes disagreeing on the node count", "[static]") {
  StaticHarness h;
  h.join_at(1, 0);
  Config two = h.config;
  two.min_nodes = two.max_nodes = 2;
  const std::string message = error_for(h.join_at(2, 1, 1, two), 2);
  CHECK_THAT(message, Catch::Contains("max_nodes 2 (this node) vs 3 (the job)"));
  CHECK_THAT(message, Catch::Contains("same --nnodes"));
}

TEST_CASE("pinned ranks need a fixed node count", "[static]") {
  StaticHarness h;
  Config elastic = h.config;
  elastic.min_nodes = 1;
  const std::string message = error_for(h.join_at(1, 0, 1, elastic), 1);
  CHECK_THAT(message, Catch::Contains("elastic"));
  CHECK_THAT(message, Catch::Contains("--nnodes N"));
}

TEST_CASE("pinned and assigned ranks never mix in one job", "[static]") {
  StaticHarness h;
  h.join_at(1, 0);
  CHECK_THAT(error_for(h.join(2), 2), Catch::Contains("without a node rank"));

  Harness c10d;  // the other way round
  c10d.join(1);
  JoinRequest pinned{"job", c10d.config, Harness::info(2), 1};
  pinned.config.min_nodes = pinned.config.max_nodes;
  // Its config differs too (that is reported first); with an equal one the rank is the issue.
  CHECK_THAT(error_for(c10d.registry.handle(2, pinned, c10d.now), 2),
             Catch::Contains("different configuration"));
  Harness fixed;
  fixed.config.min_nodes = fixed.config.max_nodes;
  fixed.join(1);
  JoinRequest pinned_same{"job", fixed.config, Harness::info(2), 1};
  CHECK_THAT(error_for(fixed.registry.handle(2, pinned_same, fixed.now), 2),
             Catch::Contains("ranks assigned (c10d)"));
}

TEST_CASE("pinned ranks: a restart keeps every node's rank and counts once", "[static]") {
  StaticHarness h;
  h.join_at(1, 2, 2);
  h.join_at(2, 0, 2);
  h.join_at(3, 1, 2);
  h.send(1, ReportFailure{1, {failure(4, 3, 1000)}});
  const Events e = h.send(2, WorkersStopped{1});
  CHECK(of_type<RoundComplete>(e).empty());
  const Events r = h.send(3, WorkersStopped{1});
  REQUIRE(of_type<RoundComplete>(r).size() == 3);
  CHECK(only_for<RoundComplete>(r, 2) == RoundComplete{2, 1, 0, 3, 2, 0, 6, "10.0.0.2", 29502});
  CHECK(only_for<RoundComplete>(r, 3).group_rank == 1);
  CHECK(only_for<RoundComplete>(r, 1).group_rank == 2);
}

TEST_CASE("pinned ranks: a lost node fails the job for everyone, naming it", "[static]") {
  StaticHarness h(2);
  h.join_at(1, 0);
  h.join_at(2, 1);
  CHECK(only_for<StopWorkers>(h.close(2), 1).reason == StopReason::kNodeLost);
  const Events e = h.send(1, WorkersStopped{1});  // one node cannot be a 2-node round
  const JobFinished f = only_for<JobFinished>(e, 1);
  CHECK(f.exit_code == 1);
  CHECK_THAT(f.reason, Catch::Contains("node host-2 (group rank 1) closed its connection"));
  CHECK(h.job().state() == Job::State::kFinished);
}

TEST_CASE("pinned ranks: a node taking the rank of one that succeeded and left waits", "[static]") {
  StaticHarness h(2);
  h.join_at(1, 0);
  h.join_at(2, 1);
  h.send(2, ReportSuccess{1});
  h.send(2, Leave{"SIGTERM"});  // not a loss: its part is done
  const Events joined = h.join_at(3, 1);
  CHECK(only_for<Joined>(joined, 3) == Joined{2, true});
  CHECK(of_type<StopWorkers>(joined).empty());  // no restart with the same restart count
  CHECK(h.job().state() == Job::State::kRunning);
  const Events e = h.send(1, ReportSuccess{1});
  CHECK(only_for<JobFinished>(e, 1).exit_code == 0);
  CHECK(only_for<JobFinished>(e, 3).exit_code == 0);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
