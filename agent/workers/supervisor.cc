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
  for (const Worker& w : workers_) n += w.live ? 1 : 0;
  return n;
}

void Supervisor::begin_attempt() {
  workers_.assign(options_.nproc, Worker{});
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
    workers_[r].pid = *pid;
    workers_[r].live = true;
  }
  spdlog::debug("attempt {}: {} workers started", attempt_, options_.nproc);
  if (options_.uninterruptible_timeout.count() > 0) sample_states();
}

void Supervisor::on_exit(int local_rank, proc::ExitStatus status) {
  if (!live(local_rank)) return;
  Worker& worker = workers_[local_rank];
  worker.live = false;
  if (phase_ == Phase::kRunning) {
    if (!status.ok()) {
      spdlog::info("worker {} (pid {}) failed: {}", local_rank, worker.pid, status.describe());
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
      ((status.signal != stop_signal_ && status.signal != SIGKILL) || worker.hang ||
       worker.stuck)) {
    failures_.push_back(failure_of(local_rank, status));
  }
  if (live_count() == 0) after_stop();
}

WorkerFailure Supervisor::failure_of(int local_rank, proc::ExitStatus status) const {
  const Worker& w = workers_[local_rank];
  WorkerFailure f{attempt_, local_rank,  w.pid, status, std::chrono::system_clock::now(),
                  w.hang,   std::nullopt};
  if (f.hang && f.hang->exit_code) f.status = proc::ExitStatus::exited(*f.hang->exit_code);
  if (const auto& stuck = w.stuck) {
    f.stuck = stuck->what;
    f.detected = stuck->since;
  }
  return f;
}

void Supervisor::mark_hung(int local_rank, HangNote note) {
  if (valid(local_rank)) workers_[local_rank].hang = std::move(note);
}

void Supervisor::stop(int signal, StopReason reason) {
  phase_ = Phase::kStopping;
  state_timer_.cancel();
  reason_ = reason;
  stop_signal_ = signal;
  signal_live(signal);
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
    signal_live(signal);
  }
}

void Supervisor::signal_live(int signal) {
  for (int r = 0; r < static_cast<int>(workers_.size()); ++r) {
    if (workers_[r].live) launcher_.signal_group(r, signal);
  }
}

void Supervisor::kill_now() {
  for (int r = 0; r < static_cast<int>(workers_.size()); ++r) kill(r);
}

void Supervisor::kill(int local_rank) {
  if (!live(local_rank)) return;
  launcher_.signal_group(local_rank, SIGKILL);
  auto& killed_at = workers_[local_rank].killed_at;
  if (!killed_at) killed_at = std::chrono::steady_clock::now();
  await_kills();
}

void Supervisor::await_kills() {
  if (kill_timer_armed_ || phase_ == Phase::kDone) return;
  std::optional<std::chrono::steady_clock::time_point> earliest;
  for (const Worker& w : workers_) {
    if (w.live && w.killed_at && (!earliest || *w.killed_at < *earliest)) earliest = w.killed_at;
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
  const pid_t pid = workers_[local_rank].pid;
  const auto state = options_.inspect(pid);
  if (!state) return "pid " + std::to_string(pid) + ", no /proc entry";
  return "pid " + std::to_string(pid) + ", state " + state->describe_state() + ", wait channel " +
         (state->wchan.empty() ? "none" : state->wchan);
}

void Supervisor::give_up_on_killed() {
  const auto now = std::chrono::steady_clock::now();
  for (int r = 0; r < static_cast<int>(workers_.size()) && phase_ != Phase::kDone; ++r) {
    Worker& w = workers_[r];
    if (!w.live || !w.killed_at || now - *w.killed_at < options_.kill_timeout) continue;
    const std::string what =
        fmt::format("outlived SIGKILL by {:.1f} s: {}",
                    std::chrono::duration<double>(now - *w.killed_at).count(), describe(r));
    spdlog::error(
        "worker {} {}; no longer waiting for it: it may still hold its devices (the host "
        "may need a reboot)",
        r, what);
    if (!w.stuck) w.stuck = StuckNote{what, std::chrono::system_clock::now()};
    on_exit(r, proc::ExitStatus::killed(SIGKILL));
  }
  await_kills();  // the ones SIGKILLed later
}

void Supervisor::sample_states() {
  if (phase_ != Phase::kRunning) return;
  const auto now = std::chrono::steady_clock::now();
  for (int r = 0; r < static_cast<int>(workers_.size()); ++r) {
    Worker& w = workers_[r];
    const auto state = w.live ? options_.inspect(w.pid) : std::nullopt;
    if (!state || state->state != 'D') {
      w.d_since.reset();
      continue;
    }
    if (!w.d_since) w.d_since = now;
    if (now - *w.d_since < options_.uninterruptible_timeout) continue;
    const std::string what = fmt::format(
        "in uninterruptible sleep for {:.1f} s (TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT): {}",
        std::chrono::duration<double>(now - *w.d_since).count(), describe(r));
    spdlog::error("worker {} {}; failing the group without restart", r, what);
    w.stuck = StuckNote{what, std::chrono::system_clock::now()};
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
  for (int r = 0; r < static_cast<int>(workers_.size()); ++r) {
    if (workers_[r].pid == 0) continue;
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
