#include "rendezvous/membership/step_record.h"

#include <algorithm>

namespace ddp::rendezvous::membership {

StepRecord::StepRecord(const Config& config)
    : max_no_progress_restarts_(config.max_no_progress_restarts),
      factor_milli_(config.straggler_factor_milli),
      reports_(config.straggler_reports),
      refresh_(std::min(config.keep_alive_interval, Duration(std::chrono::seconds(1)))) {}

std::vector<RankProgress> StepRecord::report(std::uint64_t first, std::uint64_t end,
                                             Duration stepping,
                                             const std::vector<RankProgress>& ranks,
                                             TimePoint now) {
  round_stepping_ = std::max(round_stepping_, stepping);
  std::vector<const RankProgress*> stepped;
  for (const RankProgress& p : ranks) {
    ++visits_;
    if (p.rank < first || p.rank >= end) continue;
    auto [slot, fresh] = ranks_.try_emplace(p.rank, p);
    if (fresh || slot->second.step != p.step) stepped.push_back(&p);
    slot->second = p;
    if (!best_step_ || p.step > *best_step_) {
      best_step_ = p.step;
      round_progressed_ = true;
    }
  }
  std::vector<RankProgress> flagged;
  for (const RankProgress* p : stepped) {
    if (observe(*p, now)) flagged.push_back(*p);
  }
  return flagged;
}

bool StepRecord::observe(const RankProgress& p, TimePoint now) {
  if (factor_milli_ == 0 || p.step_time.count() <= 0) return false;
  if (!median_at_ || now - *median_at_ >= refresh_ || median_.count() <= 0) refresh_median(now);
  if (median_.count() <= 0) return false;
  // step_time > factor x median, in integers: step_time x 1000 > factor_milli x median.
  const bool slow =
      p.step_time.count() * 1000 > static_cast<std::int64_t>(factor_milli_) * median_.count();
  if (!slow) {
    slow_.erase(p.rank);
    flagged_.erase(p.rank);
    return false;
  }
  if (flagged(p.rank) || ++slow_[p.rank] < reports_) return false;
  flagged_.insert(p.rank);
  return true;
}

void StepRecord::refresh_median(TimePoint now) {
  median_at_ = now;
  scratch_.clear();
  for (const auto& [rank, p] : ranks_) {
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

void StepRecord::new_round() {
  stepping_before_ += round_stepping_;
  round_stepping_ = Duration(0);
  round_progressed_ = false;
  ranks_.clear();
  slow_.clear();
  flagged_.clear();
  median_ = {};
  median_at_.reset();
}

bool StepRecord::out_of_progress(bool counts) {
  if (round_progressed_) {
    no_progress_restarts_ = 0;
    return false;
  }
  if (!counts || max_no_progress_restarts_ == 0) return false;
  if (no_progress_restarts_ >= max_no_progress_restarts_) return stopped_for_no_progress_ = true;
  ++no_progress_restarts_;
  return false;
}

void StepRecord::resume(std::optional<std::int64_t> best_step, std::uint32_t no_progress_restarts,
                        Duration stepping_before) {
  best_step_ = best_step;
  no_progress_restarts_ = no_progress_restarts;
  stepping_before_ = stepping_before;
}

StepView StepRecord::view() const {
  StepView v{best_step_, no_progress_restarts_, stepping(), flagged_.size(), median_, {}};
  for (auto it = flagged_.begin();
       it != flagged_.end() && v.straggler_ranks.size() < StepView::kListedStragglers; ++it) {
    v.straggler_ranks.push_back({*it, ranks_.at(*it).step_time});
  }
  return v;
}

}  // namespace ddp::rendezvous::membership
