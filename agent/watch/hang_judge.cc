#include "agent/watch/hang_judge.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace ddp::agent {

bool record_beat(WorkerProgress& p, std::optional<std::int64_t> step,
                 std::chrono::steady_clock::time_point now,
                 std::chrono::system_clock::time_point wall) {
  ++p.beats;
  p.last_beat = now;
  p.last_beat_wall = wall;
  if (!step) return false;
  if (!p.step) p.first_step_beat = now;
  p.last_step_beat = now;
  if (p.step == step) {
    p.step_repeated = now;
    return false;
  }
  if (p.step && *step > *p.step) {
    using std::chrono::duration_cast;
    using std::chrono::microseconds;
    p.step_time = p.step_repeated > p.step_changed
                      ? duration_cast<microseconds>(p.step_repeated - p.step_changed)
                      : duration_cast<microseconds>(now - p.step_changed) / (*step - *p.step);
  }
  p.step = step;
  p.step_changed = now;
  return true;
}

std::optional<HangJudge::Clock::time_point> HangJudge::deadline_of(const WorkerProgress& w) const {
  if (!enabled()) return std::nullopt;
  if (w.beats > 0) return w.last_beat + limits_.timeout;
  if (limits_.first_beat_timeout) return started_ + *limits_.first_beat_timeout;
  return std::nullopt;  // never beat: never judged
}

std::optional<HangJudge::Clock::time_point> HangJudge::next_deadline(
    const std::vector<WorkerProgress>& workers) const {
  std::optional<Clock::time_point> next;
  for (const auto& w : workers) {
    auto d = deadline_of(w);
    if (d && (!next || *d < *next)) next = d;
  }
  return next;
}

std::vector<std::size_t> HangJudge::hung(const std::vector<WorkerProgress>& workers,
                                         Clock::time_point now) const {
  auto first = next_deadline(workers);
  if (!first || *first > now) return {};
  // Once one worker is hung, the ones that went silent with it (their beats reached the agent
  // a moment later, e.g. read in the same batch) are judged together, so that the culprit is
  // chosen by step and not by the order the agent happened to read their channels in.
  const auto window =
      std::min<std::chrono::milliseconds>(std::chrono::seconds(1), limits_.timeout / 4);
  return due_by(workers, now + window);
}

std::vector<std::size_t> HangJudge::hung_beside(const std::vector<WorkerProgress>& workers,
                                                Clock::time_point now) const {
  if (!enabled()) return {};
  return due_by(workers, now + limits_.timeout / 2);
}

std::vector<std::size_t> HangJudge::due_by(const std::vector<WorkerProgress>& workers,
                                           Clock::time_point until) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    auto d = deadline_of(workers[i]);
    if (d && *d <= until) out.push_back(i);
  }
  auto key = [&](std::size_t i) {
    const WorkerProgress& w = workers[i];
    // Never beat sorts first (it stalled before anything); then the lowest step.
    return std::make_tuple(w.beats > 0, w.step.value_or(-1), w.last_beat, w.rank);
  };
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  return out;
}

std::string HangJudge::describe(const std::vector<WorkerProgress>& workers, std::size_t index,
                                Clock::time_point now) {
  const WorkerProgress& w = workers[index];
  std::string text = "rank " + std::to_string(w.rank);
  if (w.beats == 0) {
    text += " never sent a heartbeat";
  } else {
    const double ago = std::chrono::duration<double>(now - w.last_beat).count();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s ago", ago);
    text += " last beat";
    if (w.step) text += " at step " + std::to_string(*w.step);
    text += std::string(" (") + seconds + ")";
  }
  // How far the others of this node got.
  std::optional<std::int64_t> lowest, highest;
  int others = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    if (i == index || !workers[i].step) continue;
    ++others;
    lowest = lowest ? std::min(*lowest, *workers[i].step) : *workers[i].step;
    highest = highest ? std::max(*highest, *workers[i].step) : *workers[i].step;
  }
  if (others > 0 && lowest == highest) {
    text += others == 1 ? "; the other rank here reached step " + std::to_string(*lowest)
                        : "; every other rank here reached step " + std::to_string(*lowest);
  } else if (others > 0) {
    text += "; the other ranks here reached steps " + std::to_string(*lowest) + " to " +
            std::to_string(*highest);
  }
  return text;
}

}  // namespace ddp::agent
