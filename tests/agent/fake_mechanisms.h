// Fakes of the agent policy's mechanisms (rendezvous backend, workers, clock, report): each
// records what the policy asked of it in one shared, ordered log, and the test plays the
// events back by calling the machine's event methods.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/clock.h"
#include "agent/membership/rendezvous_backend.h"
#include "agent/report/job_report.h"
#include "agent/workers/workers.h"

namespace ddp::agent::testing {

using Log = std::vector<std::string>;

class FakeBackend final : public RendezvousBackend {
 public:
  explicit FakeBackend(Log& log) : log_(log) {}
  void join(RendezvousEvents& events) override {
    events_ = &events;
    log_.push_back("join");
  }
  void report_success(std::uint64_t round) override {
    log_.push_back("success " + std::to_string(round));
  }
  void report_failure(std::uint64_t round,
                      std::vector<rendezvous::membership::Failure> failures) override {
    log_.push_back("failure " + std::to_string(round) + " x" + std::to_string(failures.size()));
  }
  void workers_stopped(std::uint64_t round) override {
    log_.push_back("stopped " + std::to_string(round));
  }
  void report_progress(rendezvous::membership::Progress p) override {
    std::string line = "progress " + std::to_string(p.round) + ":";
    for (const auto& r : p.ranks) {
      line += ' ';  // appended piece by piece: GCC 12's -Wrestrict false positive (bug 105329)
      line += std::to_string(r.rank);
      line += '@';
      line += std::to_string(r.step);
    }
    log_.push_back(line);
  }
  void leave(const std::string& reason) override { log_.push_back("leave: " + reason); }
  void wait_finished(std::function<void()> done) override {
    log_.push_back("wait finished");
    finished_ = std::move(done);
  }
  void close() override { log_.push_back("close"); }

  // The test's side: the others have heard of the end.
  void drained() {
    if (finished_) finished_();
  }
  RendezvousEvents* events_ = nullptr;

 private:
  Log& log_;
  std::function<void()> finished_;
};

class FakeWorkers final : public Workers {
 public:
  explicit FakeWorkers(Log& log) : log_(log) {}
  void set_events(WorkerEvents& events) override { events_ = &events; }
  void start(const Round& round) override {
    started.push_back(round);
    log_.push_back("start round " + std::to_string(round.round) + " world " +
                   std::to_string(round.world_size) + " restart " +
                   std::to_string(round.restart_count));
  }
  void stop(int signal) override { log_.push_back("stop workers " + std::to_string(signal)); }
  void kill_now() override { log_.push_back("kill workers"); }
  void abort_hung(const HangReport& report) override {
    log_.push_back("abort hung " + std::to_string(report.local_ranks.size()));
  }
  std::optional<HangReport> judge_hang_elsewhere() override {
    log_.push_back("judge hang elsewhere");
    return std::exchange(hung_beside_peer, std::nullopt);
  }
  void hung(const HangReport& report) { events_->on_workers_hung(report); }
  rendezvous::membership::Progress progress() const override { return steps; }
  // The test's side: a worker beat step `step` (what progress() answers from now on).
  void beat(std::uint64_t rank, std::int64_t step) {
    steps.round = started.empty() ? 0 : started.back().round;
    steps.ranks = {{rank, step, {}}};
    events_->on_workers_progress();
  }
  rendezvous::membership::Progress steps;
  // What judge_hang_elsewhere() answers next (once).
  std::optional<HangReport> hung_beside_peer;

  // The test's side: the group ended.
  void done(Outcome::Kind kind, int signal = 0, int failures = 0) {
    WorkersResult r;
    r.outcome.kind = kind;
    r.outcome.signal = signal;
    r.failures.resize(static_cast<std::size_t>(failures));
    events_->on_workers_done(r);
  }
  std::vector<Round> started;

 private:
  Log& log_;
  WorkerEvents* events_ = nullptr;
};

class FakeClock final : public Clock {
 public:
  TimerId after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    timers_[next_] = {now_ + delay, std::move(fn)};
    return next_++;
  }
  void cancel(TimerId id) override { timers_.erase(id); }
  // Moves time on by `d`, running the timers that come due, in order.
  void advance(std::chrono::milliseconds d) {
    now_ += d;
    for (bool ran = true; ran;) {
      ran = false;
      for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.first <= now_) {
          auto fn = std::move(it->second.second);
          timers_.erase(it);
          fn();
          ran = true;
          break;
        }
      }
    }
  }
  std::size_t pending() const { return timers_.size(); }

 private:
  std::chrono::milliseconds now_{0};
  std::map<TimerId, std::pair<std::chrono::milliseconds, std::function<void()>>> timers_;
  TimerId next_ = 1;
};

class FakeReport final : public JobReport {
 public:
  explicit FakeReport(Log& log) : log_(log) {}
  void job_finished(const rendezvous::membership::JobFinished& f,
                    const WorkersResult* last) override {
    log_.push_back("report exit " + std::to_string(f.exit_code) +
                   (last != nullptr ? " with local result" : ""));
  }

 private:
  Log& log_;
};

}  // namespace ddp::agent::testing
