#include "agent/agent_machine.h"

#include <spdlog/spdlog.h>

#include <csignal>

#include "common/signal_name.h"

namespace ddp::agent {

AgentMachine::AgentMachine(RendezvousBackend& backend, Workers& workers, Clock& clock,
                           JobReport& report, Options options,
                           std::function<void(int exit_code)> on_done)
    : backend_(backend),
      workers_(workers),
      clock_(clock),
      report_(report),
      options_(std::move(options)),
      on_done_(std::move(on_done)) {
  workers_.set_events(*this);
}

void AgentMachine::start() {
  state_ = State::kJoining;
  events().join();
  backend_.join(*this);
}

void AgentMachine::on_round(const Round& round) {
  switch (state_) {
    case State::kJoining:
    case State::kReported: {
      const std::uint64_t previous_round = round_;
      const int previous_restart_count = restart_count_;
      round_ = round.round;
      restart_count_ = round.restart_count;
      if (state_ == State::kReported) {
        events().restart(round, previous_round, previous_restart_count);
      }
      events().round(round);
      last_result_.reset();
      state_ = State::kRunning;
      workers_.start(round);
      return;
    }
    case State::kRunning:
    case State::kStopping:
      // A backend assigns a round only after this node answered for the last one.
      spdlog::warn("round {} arrived while the workers of round {} still run; ignored", round.round,
                   round_);
      return;
    case State::kFinishing:
    case State::kDone:
      return;
  }
}

void AgentMachine::on_straggler(const rendezvous::membership::Straggler& straggler) {
  spdlog::warn("round {}: rank {} is a straggler: step time {:.3f}s, the job's median {:.3f}s{}",
               straggler.round, straggler.rank,
               std::chrono::duration<double>(straggler.step_time).count(),
               std::chrono::duration<double>(straggler.median).count(),
               straggler.removed ? "; the job removes this node (--exclude-straggler)" : "");
  events().straggler(straggler);
}

void AgentMachine::on_stop_workers(std::uint64_t round, const std::string& detail, bool for_hang) {
  if (state_ == State::kFinishing || state_ == State::kDone) return;
  spdlog::warn("round {}: stopping the workers: {}", round, detail);
  events().stop_requested(round, detail);
  if (state_ == State::kRunning && round == round_) {
    // A worker elsewhere hung: this node's workers that stalled with it are reported hung too,
    // so that the rendezvous picks the one that got least far, whichever node noticed first.
    if (for_hang) {
      if (auto report = workers_.judge_hang_elsewhere()) return on_workers_hung(*report);
    }
    return stop_workers(SIGTERM);
  }
  if (state_ == State::kStopping && round == round_) return;  // answered once they exited
  // No group of that round runs here (it ended, or this node waits to join): answer now.
  if (answered_.insert(round).second) backend_.workers_stopped(round);
}

void AgentMachine::on_workers_done(const WorkersResult& result) {
  if (state_ != State::kRunning && state_ != State::kStopping) return;  // killed at the end
  last_result_ = result;
  events().workers_done(result);
  if (signal_ != 0) {  // this node leaves; the job goes on without it
    backend_.leave("agent received " + signal_name(signal_));
    return finish(128 + signal_);
  }
  if (lost_) return finish(1);  // nobody to report to
  state_ = State::kReported;
  report(result);
}

void AgentMachine::on_workers_hung(const HangReport& report) {
  if (state_ != State::kRunning) return;  // already stopping: the group ends anyway
  events().workers_hung(report);
  // The abort ends the group (stacks first, which takes a while): a stop arriving meanwhile
  // must not end it sooner, or the hung workers' failures would never be reported.
  state_ = State::kStopping;
  workers_.abort_hung(report);
}

void AgentMachine::on_workers_progress() {
  if ((state_ != State::kRunning && state_ != State::kStopping) || progress_timer_) return;
  progress_timer_ = clock_.after(options_.progress_interval, [this] {
    progress_timer_.reset();
    if (state_ == State::kRunning || state_ == State::kStopping) send_progress();
  });
}

void AgentMachine::send_progress() {
  if (progress_timer_) clock_.cancel(*progress_timer_);
  progress_timer_.reset();
  rendezvous::membership::Progress progress = workers_.progress();
  if (!progress.ranks.empty()) backend_.report_progress(std::move(progress));
}

void AgentMachine::report(const WorkersResult& result) {
  if (!answered_.insert(round_).second) return;
  send_progress();  // the round's last steps, before its answer
  switch (result.outcome.kind) {
    case Outcome::Kind::kSucceeded:
      backend_.report_success(round_);
      return;
    case Outcome::Kind::kInterrupted:
      backend_.workers_stopped(round_);
      return;
    case Outcome::Kind::kError:
      spdlog::error("{}", result.outcome.error.message());
      backend_.report_failure(round_, result.failures);
      return;
    case Outcome::Kind::kFailed:
      backend_.report_failure(round_, result.failures);
      return;
  }
}

void AgentMachine::on_job_finished(const rendezvous::membership::JobFinished& finished) {
  if (state_ == State::kFinishing || state_ == State::kDone) return;
  workers_.kill_now();
  exit_code_ = finished.exit_code;
  goodput_ = finished.goodput;
  if (progress_timer_) clock_.cancel(*progress_timer_);  // nobody wants the steps any more
  progress_timer_.reset();
  if (finished.goodput.stepping.count() > 0) {
    spdlog::info("job {}: goodput {:.1f}% ({:.1f} s stepping of {:.1f} s since the first join)",
                 options_.run_id, 100 * finished.goodput.ratio(),
                 std::chrono::duration<double>(finished.goodput.stepping).count(),
                 std::chrono::duration<double>(finished.goodput.wall).count());
  }
  if (finished.exit_code != 0) events().failure(finished);
  report_.job_finished(finished, last_result_ ? &*last_result_ : nullptr);
  state_ = State::kFinishing;
  linger_ = clock_.after(options_.finish_linger, [this] {
    linger_.reset();
    spdlog::warn(
        "job {}: a node still holds its rendezvous connection {} s after the end; exiting "
        "without waiting for it",
        options_.run_id,
        std::chrono::duration_cast<std::chrono::seconds>(options_.finish_linger).count());
    finish(exit_code_);
  });
  backend_.wait_finished([this] { finish(exit_code_); });
}

void AgentMachine::on_lost(const Status& why) {
  if (state_ != State::kDone && state_ != State::kFinishing) events().lost(why.message());
  switch (state_) {
    case State::kDone:
      return;
    case State::kFinishing:  // the end is known: the rendezvous going away changes nothing
      spdlog::warn("job {}: after its end here: {}", options_.run_id, why.message());
      return finish(exit_code_);
    case State::kRunning:
      lost_ = true;
      spdlog::error("{}; stopping the workers", why.message());
      return stop_workers(SIGTERM);
    case State::kStopping:  // already stopping; once they exited the node is done
      lost_ = true;
      spdlog::error("{}", why.message());
      return;
    case State::kJoining:
    case State::kReported:
      lost_ = true;
      spdlog::error("{}", why.message());
      return finish(1);
  }
}

void AgentMachine::on_signal(int signal) {
  if (state_ == State::kDone) return;
  if (signal_ != 0 && signal == SIGINT) {
    spdlog::warn("second SIGINT: killing the workers now");
    workers_.kill_now();
    return;
  }
  signal_ = signal;
  events().signal(signal);
  switch (state_) {
    case State::kRunning:
    case State::kStopping:
      spdlog::warn("received {}: stopping the workers and leaving the job", signal_name(signal));
      return stop_workers(signal);
    case State::kJoining:
    case State::kReported:
    case State::kFinishing:
      spdlog::warn("received {}: leaving the job", signal_name(signal));
      backend_.leave("agent received " + signal_name(signal));
      return finish(128 + signal);
    case State::kDone:
      return;
  }
}

void AgentMachine::stop_workers(int signal) {
  state_ = State::kStopping;
  workers_.stop(signal);
}

void AgentMachine::finish(int exit_code) {
  if (state_ == State::kDone) return;
  if (lost_ && signal_ == 0) exit_code = 1;
  state_ = State::kDone;
  exit_code_ = exit_code;
  events().finish(exit_code_, signal_ != 0 ? "signal" : lost_ ? "lost" : "job_finished", goodput_);
  if (linger_) clock_.cancel(*linger_);
  linger_.reset();
  if (progress_timer_) clock_.cancel(*progress_timer_);
  progress_timer_.reset();
  workers_.kill_now();
  backend_.close();
  if (on_done_) on_done_(exit_code_);
}

}  // namespace ddp::agent
