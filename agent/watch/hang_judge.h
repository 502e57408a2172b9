// Which workers of a group are hung, judged from their progress heartbeats (pure: no I/O, the
// caller passes the time). A worker that has beaten at least once and then stays silent for
// `timeout` is hung; one that never beat is judged only when `first_beat_timeout` is set (then
// from the group's start). The culprit among hung workers is the one that stalled first: one
// that never beat, then the lowest last step, then the earliest last beat, then the lowest
// rank. Workers whose deadline comes within min(1 s, timeout / 4) of a hung one's are judged
// with it. When a worker on another node was judged hung, hung_beside() judges this node's
// workers against it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::agent {

struct HangLimits {
  std::chrono::milliseconds timeout{0};  // 0: no hang detection
  std::optional<std::chrono::milliseconds> first_beat_timeout;
};

// One worker's progress as its heartbeats told it.
struct WorkerProgress {
  int rank = 0;                                       // global rank, for messages
  int beats = 0;                                      // heartbeats received
  std::optional<std::int64_t> step;                   // the last step number a beat carried
  std::chrono::steady_clock::time_point last_beat{};  // valid when beats > 0
  std::chrono::system_clock::time_point last_beat_wall{};
  // Steps (docs/progress.md): the first and the last beat carrying a step (valid with `step`),
  // when `step` last took a new value, the last beat repeating that value (its work done: the
  // rank waits for the others now; valid when after step_changed), and the step time.
  std::chrono::steady_clock::time_point first_step_beat{};
  std::chrono::steady_clock::time_point last_step_beat{};
  std::chrono::steady_clock::time_point step_changed{};
  std::chrono::steady_clock::time_point step_repeated{};
  std::chrono::microseconds step_time{};
};

// Records one beat of `p` (carrying `step`, or none) read at `now`; true when the step took a
// new value. The step time (docs/stragglers.md) is set when the step goes up: the time from the
// previous step's first beat to its last repeat when the worker beat it again (the rank's own
// work, before it waited for the others at a collective), else the time between the two step
// changes divided by the steps between them.
bool record_beat(WorkerProgress& p, std::optional<std::int64_t> step,
                 std::chrono::steady_clock::time_point now,
                 std::chrono::system_clock::time_point wall);

class HangJudge {
 public:
  using Clock = std::chrono::steady_clock;
  HangJudge(HangLimits limits, Clock::time_point started) : limits_(limits), started_(started) {}

  bool enabled() const { return limits_.timeout.count() > 0; }
  // When the next worker may become hung if nothing beats meanwhile; nullopt when none can.
  std::optional<Clock::time_point> next_deadline(const std::vector<WorkerProgress>& workers) const;
  // Indices (into `workers`) of the hung workers at `now`, culprit first.
  std::vector<std::size_t> hung(const std::vector<WorkerProgress>& workers,
                                Clock::time_point now) const;
  // A worker elsewhere was judged hung (the job stops for it): indices of the workers hung
  // with it at `now`, culprit first: those silent for at least half the timeout. One that
  // stalled with it went silent about when it did (its node read the beats, or heard of the
  // hang, a little earlier or later); one still beating is not hung. Empty when disabled.
  std::vector<std::size_t> hung_beside(const std::vector<WorkerProgress>& workers,
                                       Clock::time_point now) const;
  // "rank 3 last beat at step 41 (3.0 s ago); every other rank reached step 42" for hung worker
  // `index`, comparing with every worker of `workers` (this node's).
  static std::string describe(const std::vector<WorkerProgress>& workers, std::size_t index,
                              Clock::time_point now);

 private:
  std::optional<Clock::time_point> deadline_of(const WorkerProgress& w) const;
  // The workers whose deadline is at or before `until`, culprit first.
  std::vector<std::size_t> due_by(const std::vector<WorkerProgress>& workers,
                                  Clock::time_point until) const;

  HangLimits limits_;
  Clock::time_point started_;
};

}  // namespace ddp::agent
