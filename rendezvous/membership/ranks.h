// The rank rule of a round, as a pure function.
//
// Static rendezvous: nodes with a pinned rank (JoinRequest::node_rank) come first, ordered by
// it; the job (job.h) admits only distinct pinned ranks below max_nodes and completes such a
// round only with all of them, so every node's group rank is its pinned rank.
//
// Otherwise: nodes that took part in the previous completed round ("survivors") are admitted
// first, in their previous group-rank order; then every other node in join order (the job's
// JOIN sequence number); at most max_nodes, the rest stay waiting (spares, docs/spares.md).
// A survivor keeps its group rank when it is below the admitted count; the free ranks go in
// ascending order to newcomers in join order, then to the survivors whose rank is beyond the
// count. So survivors keep their ranks when a spare replaces a lost node, a surviving
// group-rank-0 node keeps rank 0 and the worker store does not move, and the result depends
// only on the order of inputs, never on hashing, addresses or time. Global ranks follow
// group-rank order then local rank: rank_offset[i] = sum of local_world_size of nodes ranked
// before i (so they stay too when the spare has the lost node's local world size).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

struct RankCandidate {
  NodeId id = 0;
  std::optional<std::uint32_t> prev_group_rank;  // set for survivors of the previous round
  std::uint64_t join_seq = 0;                    // unique within a job
  std::uint32_t local_world_size = 1;
  std::optional<std::uint32_t> pinned_rank{};  // static rendezvous: --node-rank
};

struct RankPlan {
  std::vector<NodeId> admitted;            // index = group rank
  std::vector<std::uint64_t> rank_offset;  // same length as admitted
  std::uint64_t world_size = 0;
  std::vector<NodeId> left_out;  // beyond max_nodes, in rank-rule order
};

// O(n log n) in the number of candidates.
RankPlan plan_ranks(std::vector<RankCandidate> candidates, std::uint32_t max_nodes);

}  // namespace ddp::rendezvous::membership
