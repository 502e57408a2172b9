// Straggler detection for one job's round (docs/stragglers.md). Pure, like Job: the job feeds
// it each rank's progress report that carried a new step, with the round's table of every
// rank's last report. A rank whose step time exceeds factor x the median step time of the
// round's ranks in `reports` such reports in a row is flagged; a report at or under the bound
// clears its streak and its flag.
//
// Cost: the median (the lower median of the nonzero step times) is recomputed at most once
// per `refresh` (the job's keep_alive_interval, at most 1 s), by one nth_element over the
// round's ranks (and while no step time is known yet); between refreshes a report costs
// O(1) per rank in it. So a job of R ranks does O(R) work per second, not per request.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rendezvous/membership/config.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

// One rank's step time as observers show it.
struct RankStepView {
  std::uint64_t rank = 0;
  std::chrono::microseconds step_time{};
  bool straggler = false;
  bool operator==(const RankStepView&) const = default;
};

class Stragglers {
 public:
  using Table = std::unordered_map<std::uint64_t, RankProgress>;

  // factor_milli: Config::straggler_factor_milli (0: off, observe() never flags).
  Stragglers(std::uint32_t factor_milli, std::uint32_t reports, Duration refresh)
      : factor_milli_(factor_milli), reports_(reports), refresh_(refresh) {}

  // `p` (already stored in `table`) moved its rank's step at `now`: true when that makes the
  // rank a straggler now (it was not flagged before this report).
  bool observe(const RankProgress& p, const Table& table, TimePoint now);
  // A new round: no streaks, no flags, no median.
  void clear();

  bool flagged(std::uint64_t rank) const;
  std::size_t flagged_count() const { return flagged_count_; }
  // The median as last computed (zero before any rank's step time is known).
  std::chrono::microseconds median() const { return median_; }
  // At most `limit` ranks: the flagged ones first, then the slowest; each group by step time
  // descending, then rank. O(R log limit).
  std::vector<RankStepView> slowest(const Table& table, std::size_t limit) const;
  // Ranks visited by median refreshes (Job::visits counts them).
  std::uint64_t visits() const { return visits_; }

 private:
  struct Streak {
    std::uint32_t slow = 0;
    bool flagged = false;
  };
  void refresh_median(const Table& table, TimePoint now);

  std::uint32_t factor_milli_;
  std::uint32_t reports_;
  Duration refresh_;
  std::unordered_map<std::uint64_t, Streak> streaks_;
  std::size_t flagged_count_ = 0;
  std::chrono::microseconds median_{};
  std::optional<TimePoint> median_at_;
  std::vector<std::int64_t> scratch_;  // reused by refresh_median
  std::uint64_t visits_ = 0;
};

}  // namespace ddp::rendezvous::membership
