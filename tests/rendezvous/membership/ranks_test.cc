// The rank rule as a pure function: survivors admitted first and keeping their ranks, free
// ranks to newcomers in join order; offsets from real local world sizes; at most max_nodes.
#include "rendezvous/membership/ranks.h"

#include <algorithm>
#include <random>

#include "tests/catch.h"

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

TEST_CASE("survivors keep their ranks and a newcomer takes the free one", "[ranks]") {
  // Node 5 joined first but is new (a spare); 7 was rank 2 and 9 rank 0 in the previous round,
  // whose rank 1 was lost.
  std::vector<RankCandidate> c = {{5, {}, 0, 1}, {7, 2u, 4, 1}, {9, 0u, 6, 1}};
  CHECK(plan_ranks(c, 8).admitted == std::vector<NodeId>{9, 5, 7});
}

TEST_CASE("without a newcomer, survivors beyond the count move down into free ranks", "[ranks]") {
  // Ranks 0..4 ran; 1 and 3 were lost: 0 and 2 stay, 4 takes rank 1.
  std::vector<RankCandidate> c = {{10, 0u, 0, 1}, {12, 2u, 2, 1}, {14, 4u, 4, 1}};
  CHECK(plan_ranks(c, 8).admitted == std::vector<NodeId>{10, 14, 12});
  // With one spare (joined last): 0, 2 and 4 stay; the spare takes 1, the lowest free rank;
  // 3 stays free in a job of 4 nodes, so 4 moves to 3.
  c.push_back({20, {}, 9, 1});
  CHECK(plan_ranks(c, 8).admitted == std::vector<NodeId>{10, 20, 12, 14});
  // Two spares: every survivor keeps its rank.
  c.push_back({21, {}, 10, 1});
  CHECK(plan_ranks(c, 8).admitted == std::vector<NodeId>{10, 20, 12, 21, 14});
  // At max_nodes 5 a third spare stays a spare.
  c.push_back({22, {}, 11, 1});
  const RankPlan p = plan_ranks(c, 5);
  CHECK(p.admitted == std::vector<NodeId>{10, 20, 12, 21, 14});
  CHECK(p.left_out == std::vector<NodeId>{22});
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
