#include "rendezvous/membership/stragglers.h"

#include <algorithm>
#include <tuple>

namespace ddp::rendezvous::membership {

bool Stragglers::observe(const RankProgress& p, const Table& table, TimePoint now) {
  if (factor_milli_ == 0 || p.step_time.count() <= 0) return false;
  if (!median_at_ || now - *median_at_ >= refresh_ || median_.count() <= 0) {
    refresh_median(table, now);
  }
  if (median_.count() <= 0) return false;
  Streak& s = streaks_[p.rank];
  // step_time > factor x median, in integers: step_time x 1000 > factor_milli x median.
  const bool slow =
      p.step_time.count() * 1000 > static_cast<std::int64_t>(factor_milli_) * median_.count();
  if (!slow) {
    if (s.flagged) --flagged_count_;
    s = Streak{};
    return false;
  }
  if (s.flagged || ++s.slow < reports_) return false;
  s.flagged = true;
  ++flagged_count_;
  return true;
}

void Stragglers::refresh_median(const Table& table, TimePoint now) {
  median_at_ = now;
  scratch_.clear();
  for (const auto& [rank, p] : table) {
    ++visits_;
    if (p.step_time.count() > 0) scratch_.push_back(p.step_time.count());
  }
  if (scratch_.empty()) {
    median_ = {};
    return;
  }
  auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>((scratch_.size() - 1) / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  median_ = std::chrono::microseconds(*mid);
}

void Stragglers::clear() {
  streaks_.clear();
  flagged_count_ = 0;
  median_ = {};
  median_at_.reset();
}

bool Stragglers::flagged(std::uint64_t rank) const {
  auto it = streaks_.find(rank);
  return it != streaks_.end() && it->second.flagged;
}

std::vector<RankStepView> Stragglers::slowest(const Table& table, std::size_t limit) const {
  // Flagged first, then slower first, then lower rank: a min-heap of the `limit` best.
  auto before = [](const RankStepView& a, const RankStepView& b) {
    return std::make_tuple(!a.straggler, -a.step_time.count(), a.rank) <
           std::make_tuple(!b.straggler, -b.step_time.count(), b.rank);
  };
  std::vector<RankStepView> heap;
  if (limit == 0) return heap;
  for (const auto& [rank, p] : table) {
    RankStepView v{rank, p.step_time, flagged(rank)};
    if (heap.size() < limit) {
      heap.push_back(v);
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (before(v, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = v;
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), before);
  return heap;
}

}  // namespace ddp::rendezvous::membership
