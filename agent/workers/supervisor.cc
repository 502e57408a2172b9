#include "agent/workers/supervisor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>

namespace ddp::agent {

Supervisor::Supervisor(boost::asio::io_context& io, proc::ProcessLauncher& launcher,
                       SupervisorOptions options, MakeSpec make_spec, BeforeAttempt before_attempt,
                       Done done)
    : launcher_(launcher),
      options_(options),
      make_spec_(std::move(make_spec)),
      before_attempt_(std::move(before_attempt)),
      done_(std::move(done)),
      grace_timer_(io),
      kill_timer_(io),
      state_timer_(io) {}

void Supervisor::start(int attempt) {
  if (phase_ != Phase::kIdle) return;
  attempt_ = attempt;
  begin_attempt();
}

int Supervisor::live_count() const {
  int n = 0;
  for (bool l : live_) n += l ? 1 : 0;
  return n;
}

void Supervisor::begin_attempt() {
  pids_.assign(options_.nproc, 0);
  live_.assign(options_.nproc, false);
  hang_notes_.assign(options_.nproc, std::nullopt);
  stuck_.assign(options_.nproc, std::nullopt);
  killed_at_.assign(options_.nproc, std::nullopt);
  d_since_.assign(options_.nproc, std::nullopt);
  failures_.clear();
  phase_ = Phase::kRunning;
  if (Status s = before_attempt_(attempt_); !s) {
    error_ = s;
    finish(Outcome{Outcome::Kind::kError, 0, {}, error_});
    return;
  }
  for (int r = 0; r < options_.nproc; ++r) {
    auto pid = launcher_.spawn(r, make_spec_(attempt_, r));
    if (!pid) {
      error_ = pid.status();
      stop(SIGTERM, StopReason::kError);
      return;
    }
    pids_[r] = *pid;
    live_[r] = true;
  }
  spdlog::debug("attempt {}: {} workers started", attempt_, options_.nproc);
  if (options_.uninterruptible_timeout.count() > 0) sample_states();
}

void Supervisor::on_exit(int local_rank, proc::ExitStatus status) {
  if (local_rank < 0 || local_rank >= static_cast<int>(live_.size()) || !live_[local_rank]) return;
  live_[local_rank] = false;
  if (phase_ == Phase::kRunning) {
    if (!status.ok()) {
      spdlog::info("worker {} (pid {}) failed: {}", local_rank, pids_[local_rank],
                   status.describe());
      failures_.push_back(failure_of(local_rank, status));
      stop(SIGTERM, StopReason::kFailure);
      return;
    }
    if (live_count() == 0) {
      end_attempt_groups();
      finish(Outcome{Outcome::Kind::kSucceeded, 0, {}, {}});
    }
    return;
  }
  if (phase_ != Phase::kStopping) return;
  // A failure of its own during a failure stop (not our death signal), or another worker the
  // agent killed as hung: report it too.
  if (reason_ == StopReason::kFailure && !status.ok() &&
      ((status.signal != stop_signal_ && status.signal != SIGKILL) || hang_notes_[local_rank] ||
       stuck_[local_rank])) {
    failures_.push_back(failure_of(local_rank, status));
  }
  if (live_count() == 0) after_stop();
}

WorkerFailure Supervisor::failure_of(int local_rank, proc::ExitStatus status) const {
  WorkerFailure f{attempt_,
                  local_rank,
                  pids_[local_rank],
                  status,
                  std::chrono::system_clock::now(),
                  hang_notes_[local_rank],
                  std::nullopt};
  if (f.hang && f.hang->exit_code) f.status = proc::ExitStatus::exited(*f.hang->exit_code);
  if (const auto& stuck = stuck_[local_rank]) {
    f.stuck = stuck->what;
    f.detected = stuck->since;
  }
  return f;
}

void Supervisor::mark_hung(int local_rank, HangNote note) {
  if (local_rank >= 0 && local_rank < static_cast<int>(hang_notes_.size())) {
    hang_notes_[local_rank] = std::move(note);
  }
}

void Supervisor::stop(int signal, StopReason reason) {
  phase_ = Phase::kStopping;
  state_timer_.cancel();
  reason_ = reason;
  stop_signal_ = signal;
  for (int r = 0; r < static_cast<int>(live_.size()); ++r) {
    if (live_[r]) launcher_.signal_group(r, signal);
  }
  if (live_count() == 0) {
    after_stop();
    return;
  }
  grace_timer_.expires_after(options_.shutdown_timeout);
  grace_timer_.async_wait([this, attempt = attempt_](const boost::system::error_code& ec) {
    if (ec || phase_ != Phase::kStopping || attempt != attempt_) return;
    if (live_count() > 0) {
      spdlog::info("{} worker(s) still running after the {} ms shutdown timeout: SIGKILL",
                   live_count(), options_.shutdown_timeout.count());
    }
    kill_now();
  });
}

void Supervisor::interrupt(int signal) {
  if (phase_ == Phase::kRunning) {
    stop(signal, StopReason::kSignal);
  } else if (phase_ == Phase::kStopping) {
    reason_ = StopReason::kSignal;  // ends as interrupted, not failed
    stop_signal_ = signal;
    for (int r = 0; r < static_cast<int>(live_.size()); ++r) {
      if (live_[r]) launcher_.signal_group(r, signal);
    }
  }
}

void Supervisor::kill_now() {
  for (int r = 0; r < static_cast<int>(live_.size()); ++r) {
    if (live_[r]) kill(r);
  }
}

void Supervisor::kill(int local_rank) {
  if (!live(local_rank)) return;
  launcher_.signal_group(local_rank, SIGKILL);
  if (!killed_at_[local_rank]) killed_at_[local_rank] = std::chrono::steady_clock::now();
  await_kills();
}

void Supervisor::await_kills() {
  if (kill_timer_armed_ || phase_ == Phase::kDone) return;
  std::optional<std::chrono::steady_clock::time_point> earliest;
  for (int r = 0; r < static_cast<int>(live_.size()); ++r) {
    if (live_[r] && killed_at_[r] && (!earliest || *killed_at_[r] < *earliest)) {
      earliest = killed_at_[r];
    }
  }
  if (!earliest) return;
  kill_timer_armed_ = true;
  kill_timer_.expires_at(*earliest + options_.kill_timeout);
  kill_timer_.async_wait([this, attempt = attempt_](const boost::system::error_code& ec) {
    if (ec || attempt != attempt_) return;
    kill_timer_armed_ = false;
    give_up_on_killed();
  });
}

std::string Supervisor::describe(int local_rank) const {
  const pid_t pid = pids_[local_rank];
  const auto state = options_.inspect(pid);
  if (!state) return "pid " + std::to_string(pid) + ", no /proc entry";
  return "pid " + std::to_string(pid) + ", state " + state->describe_state() + ", wait channel " +
         (state->wchan.empty() ? "none" : state->wchan);
}

void Supervisor::give_up_on_killed() {
  const auto now = std::chrono::steady_clock::now();
  for (int r = 0; r < static_cast<int>(live_.size()) && phase_ != Phase::kDone; ++r) {
    if (!live_[r] || !killed_at_[r] || now - *killed_at_[r] < options_.kill_timeout) continue;
    const std::string what =
        fmt::format("outlived SIGKILL by {:.1f} s: {}",
                    std::chrono::duration<double>(now - *killed_at_[r]).count(), describe(r));
    spdlog::error(
        "worker {} {}; no longer waiting for it: it may still hold its devices (the host "
        "may need a reboot)",
        r, what);
    if (!stuck_[r]) stuck_[r] = StuckNote{what, std::chrono::system_clock::now()};
    on_exit(r, proc::ExitStatus::killed(SIGKILL));
  }
  await_kills();  // the ones SIGKILLed later
}

void Supervisor::sample_states() {
  if (phase_ != Phase::kRunning) return;
  const auto now = std::chrono::steady_clock::now();
  for (int r = 0; r < static_cast<int>(live_.size()); ++r) {
    const auto state = live_[r] ? options_.inspect(pids_[r]) : std::nullopt;
    if (!state || state->state != 'D') {
      d_since_[r].reset();
      continue;
    }
    if (!d_since_[r]) d_since_[r] = now;
    if (now - *d_since_[r] < options_.uninterruptible_timeout) continue;
    const std::string what = fmt::format(
        "in uninterruptible sleep for {:.1f} s (TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT): {}",
        std::chrono::duration<double>(now - *d_since_[r]).count(), describe(r));
    spdlog::error("worker {} {}; failing the group without restart", r, what);
    stuck_[r] = StuckNote{what, std::chrono::system_clock::now()};
    stop(SIGTERM, StopReason::kFailure);
    return;
  }
  using namespace std::chrono_literals;
  state_timer_.expires_after(
      std::clamp<std::chrono::milliseconds>(options_.uninterruptible_timeout / 10, 100ms, 5s));
  state_timer_.async_wait([this, attempt = attempt_](const boost::system::error_code& ec) {
    if (!ec && attempt == attempt_) sample_states();
  });
}

void Supervisor::end_attempt_groups() {
  // Whatever a worker left in its process group goes with it; then forget the ids.
  for (int r = 0; r < static_cast<int>(pids_.size()); ++r) {
    if (pids_[r] == 0) continue;
    launcher_.signal_group(r, SIGKILL);
    launcher_.release(r);
  }
  launcher_.kill_strays();  // and what left the groups (setsid) but was re-parented here
}

void Supervisor::after_stop() {
  grace_timer_.cancel();
  end_attempt_groups();
  switch (reason_) {
    case StopReason::kFailure:
      finish(Outcome{Outcome::Kind::kFailed, 0, failures_, {}});
      return;
    case StopReason::kSignal:
      finish(Outcome{Outcome::Kind::kInterrupted, stop_signal_, {}, {}});
      return;
    case StopReason::kError:
      finish(Outcome{Outcome::Kind::kError, 0, {}, error_});
      return;
  }
}

void Supervisor::finish(Outcome outcome) {
  phase_ = Phase::kDone;
  grace_timer_.cancel();
  kill_timer_.cancel();
  state_timer_.cancel();
  if (done_) done_(outcome);
}

}  // namespace ddp::agent
