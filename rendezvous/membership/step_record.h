// The step accounting of one job, fed by Job with every participant's progress report
// (Progress, docs/progress.md): each rank's last step and step time this round, the job's best
// step and its streak of restarts without a new one, the time its workers spent stepping
// (docs/goodput.md), and this round's stragglers (docs/stragglers.md). Membership and restarts
// stay with the Job. Pure and single-threaded like Job: time comes in as `now`.
//
// Stragglers: a rank whose step time exceeds factor x the median step time of the round's ranks
// in `straggler_reports` reports in a row (each moving its step) is flagged; a report at or
// under the bound clears its streak and its flag. The median (the lower median of the nonzero
// step times) is recomputed at most once per keep_alive_interval (at most 1 s), by one
// nth_element over the round's ranks (and while no step time is known yet); between refreshes a
// report costs O(1) per rank in it. So a job of R ranks does O(R) work per second, not per
// request.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "rendezvous/membership/config.h"
#include "rendezvous/membership/job_view.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

class StepRecord {
 public:
  explicit StepRecord(const Config& config);

  // A participant's report for the current round: its ranks in [first, end) are stored (the
  // others ignored), `stepping` raises the round's stepping time (the longest any node
  // reported) and a step above the best becomes the best. Returns the ranks the report made
  // stragglers (not flagged before it), judged once the whole report is stored.
  std::vector<RankProgress> report(std::uint64_t first, std::uint64_t end, Duration stepping,
                                   const std::vector<RankProgress>& ranks, TimePoint now);
  // A round completed: its stepping time joins the rounds before; no rank progress, no
  // streaks, no flags, no median, no progress made yet.
  void new_round();
  // The stop of a round is complete (`counts`: it counts as a restart). True when it ends the
  // job for lack of progress: after max_no_progress_restarts restarts in a row without a new
  // best step. Moves the streak (a round with a new best step resets it).
  bool out_of_progress(bool counts);
  // A job taken over from a lost daemon goes on from these (ResumePoint).
  void resume(std::optional<std::int64_t> best_step, std::uint32_t no_progress_restarts,
              Duration stepping_before);

  // The highest step any rank beat in the job's life.
  const std::optional<std::int64_t>& best_step() const { return best_step_; }
  std::uint32_t no_progress_restarts() const { return no_progress_restarts_; }
  bool stopped_for_no_progress() const { return stopped_for_no_progress_; }
  // Stepping time of the rounds before this one, and in all.
  Duration stepping_before() const { return stepping_before_; }
  Duration stepping() const { return stepping_before_ + round_stepping_; }
  // This round's ranks that beat a step, by global rank.
  const std::unordered_map<std::uint64_t, RankProgress>& ranks() const { return ranks_; }
  bool flagged(std::uint64_t rank) const { return flagged_.count(rank) != 0; }
  std::size_t flagged_count() const { return flagged_.size(); }
  // The median as last computed (zero before any rank's step time is known).
  std::chrono::microseconds median() const { return median_; }
  // Ranks visited so far (Job::visits counts them).
  std::uint64_t visits() const { return visits_; }
  // O(StepView::kListedStragglers).
  StepView view() const;

 private:
  // `p` (already stored) moved its rank's step at `now`: true when that flags the rank now.
  bool observe(const RankProgress& p, TimePoint now);
  void refresh_median(TimePoint now);

  std::uint32_t max_no_progress_restarts_;
  std::uint32_t factor_milli_;  // Config::straggler_factor_milli (0: no detection)
  std::uint32_t reports_;       // Config::straggler_reports
  Duration refresh_;            // of the median
  std::optional<std::int64_t> best_step_;
  bool round_progressed_ = false;  // this round beat a step above the best before it
  bool stopped_for_no_progress_ = false;
  std::uint32_t no_progress_restarts_ = 0;
  Duration stepping_before_{};
  Duration round_stepping_{};
  std::unordered_map<std::uint64_t, RankProgress> ranks_;  // this round's
  std::unordered_map<std::uint64_t, std::uint32_t> slow_;  // slow reports in a row, by rank
  std::set<std::uint64_t> flagged_;                        // this round's stragglers
  std::chrono::microseconds median_{};
  std::optional<TimePoint> median_at_;
  std::vector<std::int64_t> scratch_;  // reused by refresh_median
  std::uint64_t visits_ = 0;
};

}  // namespace ddp::rendezvous::membership
