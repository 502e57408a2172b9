#include "rendezvous/membership/ranks.h"

#include <algorithm>
#include <tuple>

namespace ddp::rendezvous::membership {

RankPlan plan_ranks(std::vector<RankCandidate> candidates, std::uint32_t max_nodes) {
  auto key = [](const RankCandidate& c) {
    // Pinned (by pinned rank) before the rest; survivors (0) before newcomers (1); then
    // previous rank; then join order.
    return std::make_tuple(c.pinned_rank ? 0 : 1, c.pinned_rank.value_or(0),
                           c.prev_group_rank ? 0 : 1, c.prev_group_rank.value_or(0), c.join_seq);
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const RankCandidate& a, const RankCandidate& b) { return key(a) < key(b); });
  RankPlan plan;
  const std::size_t admitted = std::min<std::size_t>(candidates.size(), max_nodes);
  plan.admitted.reserve(admitted);
  plan.rank_offset.reserve(admitted);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i < admitted) {
      plan.admitted.push_back(candidates[i].id);
      plan.rank_offset.push_back(plan.world_size);
      plan.world_size += candidates[i].local_world_size;
    } else {
      plan.left_out.push_back(candidates[i].id);
    }
  }
  return plan;
}

}  // namespace ddp::rendezvous::membership
