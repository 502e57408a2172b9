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
  // Admitted: the first max_nodes in that order. Each admitted node keeps its own rank (pinned,
  // else previous) when it is below the count; the others fill the free ranks in ascending
  // order, newcomers (a spare taking a lost node's rank) before survivors whose rank is gone.
  const std::size_t admitted = std::min<std::size_t>(candidates.size(), max_nodes);
  std::vector<const RankCandidate*> slots(admitted, nullptr);
  std::vector<const RankCandidate*> movers;
  for (std::size_t i = 0; i < admitted; ++i) {
    const RankCandidate& c = candidates[i];
    const auto own = c.pinned_rank ? c.pinned_rank : c.prev_group_rank;
    if (own && *own < admitted && slots[*own] == nullptr) {
      slots[*own] = &c;
    } else {
      movers.push_back(&c);
    }
  }
  std::stable_partition(movers.begin(), movers.end(),
                        [](const RankCandidate* c) { return !c->prev_group_rank; });
  auto next = movers.begin();
  for (auto& slot : slots) {
    if (slot == nullptr) slot = *next++;
  }
  RankPlan plan;
  plan.admitted.reserve(admitted);
  plan.rank_offset.reserve(admitted);
  for (const RankCandidate* c : slots) {
    plan.admitted.push_back(c->id);
    plan.rank_offset.push_back(plan.world_size);
    plan.world_size += c->local_world_size;
  }
  for (std::size_t i = admitted; i < candidates.size(); ++i) {
    plan.left_out.push_back(candidates[i].id);
  }
  return plan;
}

}  // namespace ddp::rendezvous::membership
