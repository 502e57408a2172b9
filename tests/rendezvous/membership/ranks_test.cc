// The rank rule as a pure function: survivors first by previous rank, then join order;
// offsets from real local world sizes; at most max_nodes admitted.
#include "rendezvous/membership/ranks.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

namespace ddp::rendezvous::membership {
namespace {

TEST_CASE("newcomers are ranked in join order whatever the input order", "[ranks]") {
  std::vector<RankCandidate> c = {{10, {}, 2, 1}, {20, {}, 0, 1}, {30, {}, 1, 1}};
  const RankPlan expected = plan_ranks(c, 8);
  CHECK(expected.admitted == std::vector<NodeId>{20, 30, 10});
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(c.begin(), c.end(), rng);
    CHECK(plan_ranks(c, 8).admitted == expected.admitted);
  }
}

TEST_CASE("survivors keep their order ahead of newcomers", "[ranks]") {
  // Node 5 joined first but is new; 7 was rank 2 and 9 rank 0 in the previous round.
  std::vector<RankCandidate> c = {{5, {}, 0, 1}, {7, 2u, 4, 1}, {9, 0u, 6, 1}};
  CHECK(plan_ranks(c, 8).admitted == std::vector<NodeId>{9, 7, 5});
}

TEST_CASE("global rank offsets come from real local world sizes", "[ranks]") {
  std::vector<RankCandidate> c = {{1, {}, 0, 4}, {2, {}, 1, 2}, {3, {}, 2, 3}};
  const RankPlan p = plan_ranks(c, 8);
  CHECK(p.rank_offset == std::vector<std::uint64_t>{0, 4, 6});
  CHECK(p.world_size == 9);
  CHECK(p.left_out.empty());
}

TEST_CASE("nodes beyond max_nodes are left out in rank-rule order", "[ranks]") {
  std::vector<RankCandidate> c = {{1, {}, 3, 1}, {2, 1u, 9, 1}, {3, {}, 2, 1}, {4, 0u, 8, 1}};
  const RankPlan p = plan_ranks(c, 2);
  CHECK(p.admitted == std::vector<NodeId>{4, 2});
  CHECK(p.left_out == std::vector<NodeId>{3, 1});
  CHECK(p.world_size == 2);
}

TEST_CASE("pinned ranks order the nodes, not joins or survivors", "[ranks]") {
  // Static rendezvous: node rank 2 joined first and was rank 0 last round; pins rule.
  std::vector<RankCandidate> c = {{1, 0u, 0, 2, 2u}, {2, {}, 1, 3, 0u}, {3, 1u, 2, 1, 1u}};
  const RankPlan p = plan_ranks(c, 3);
  CHECK(p.admitted == std::vector<NodeId>{2, 3, 1});
  CHECK(p.rank_offset == std::vector<std::uint64_t>{0, 3, 4});
  CHECK(p.world_size == 6);
}

}  // namespace
}  // namespace ddp::rendezvous::membership
