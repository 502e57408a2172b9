// One worker group's heartbeat watch: a heartbeat channel per worker (beat_channel.h), each
// worker's progress, and one timer armed for the earliest moment a worker could become hung
// (hang_judge.h); beats only move deadlines, so the timer is re-armed when it fires, not per
// beat. Reports once per group, then stays quiet. Without hang detection it still reads the
// channels (a worker's beats never block) and keeps the progress for reports: on_step runs
// when a worker's beat carries a new step value (docs/progress.md).
//
// Threading: the io_context's thread; on_hung runs there.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "agent/watch/beat_channel.h"
#include "agent/watch/hang_judge.h"
#include "agent/workers/workers.h"
#include "common/lifetime.h"

namespace ddp::agent {

class HangWatch {
 public:
  HangWatch(boost::asio::io_context& io, HangLimits limits, int global_rank_base,
            std::function<void(HangReport)> on_hung, std::function<void()> on_step = {});
  ~HangWatch();
  HangWatch(const HangWatch&) = delete;
  HangWatch& operator=(const HangWatch&) = delete;

  // Creates local rank `local_rank`'s channel at `path` (before the worker starts).
  Status open_channel(int local_rank, const std::filesystem::path& path);
  // Starts judging (the group's workers started now).
  void start();
  // The group ended: its beats not read yet are read now (a worker's last step before it
  // exited), then no more reports.
  void stop();
  // A worker on another node was judged hung: this group's workers hung beside it
  // (HangJudge::hung_beside), reported here instead of through on_hung; afterwards no more
  // reports. nullopt when none is, or when a report was made already.
  std::optional<HangReport> judge_beside_peer();
  const std::vector<WorkerProgress>& progress() const { return progress_; }
  // The group's steps for the rendezvous (Progress of `round`): every worker that beat a step,
  // and the stepping time from the group's first step beat to its last.
  rendezvous::membership::Progress step_report(std::uint64_t round) const;

 private:
  void on_beat(int local_rank, const Beat& beat);
  void arm();
  void check();
  // The report of `hung` (culprit first) at `now`; no more reports after it.
  HangReport report(const std::vector<std::size_t>& hung, HangJudge::Clock::time_point now);

  boost::asio::io_context& io_;
  HangLimits limits_;
  int global_rank_base_;
  std::function<void(HangReport)> on_hung_;
  std::function<void()> on_step_;
  std::vector<WorkerProgress> progress_;  // by local rank
  std::vector<std::unique_ptr<BeatChannel>> channels_;
  std::optional<HangJudge> judge_;
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  bool done_ = false;
  Lifetime life_;  // last: handlers queued when this dies touch nothing
};

}  // namespace ddp::agent
