// One attempt of this node's worker group (a mechanism: whether to restart is the agent
// policy's call, agent_machine.h): start every local rank's worker, watch their exits, stop
// the group on the first failure (death signal to every live worker's process group,
// shutdown_timeout of grace, then SIGKILL), and say once how it ended.
//
//   idle -> running -> (all exit 0) -> done: succeeded
//              |  first non-zero exit / interrupt(sig) / spawn error / stuck in D state
//              v
//           stopping -> all exited (or given up) -> done: failed | interrupted | error
//
// Workers SIGKILL cannot end (docs/unkillable.md): every wait for an exit after a SIGKILL is
// bounded by kill_timeout; a worker still alive then is given up: one error line names its pid,
// state and wait channel, it counts as exited (killed by SIGKILL) and, in a failed group, as
// a failure marked `stuck`. With uninterruptible_timeout, a running worker seen in
// uninterruptible sleep (D) at every sample for that long is `stuck` too and fails the group.
// A stuck failure tells the job not to restart: the worker may still hold its devices.
// The D state is sampled (no event exists for it): every uninterruptible_timeout / 10, at
// least 100 ms apart and at most 5 s.
//
// Every OS effect goes through proc::ProcessLauncher; time is an Asio steady_timer on the
// given io_context. Worker ids given to the launcher are local ranks.
//
// Threading: the io_context's single thread. The done callback runs once, on it.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "proc/process_launcher.h"
#include "proc/process_state.h"

namespace ddp::agent {

// Why the agent killed a worker it judged hung (docs/hangs.md): what the report says instead
// of an error file.
struct HangNote {
  std::string summary;     // "hung: rank 1 last beat at step 4 (3.0 s ago); ..."
  std::string stack_head;  // the first lines of its stack
  std::chrono::system_clock::time_point since;  // when it stalled: its failure time
  std::optional<int> exit_code;      // reported instead of how it died (124 for a silent worker)
  bool silent = false;               // judged by its heartbeats (not by torchrun's file timer)
  std::optional<std::int64_t> step;  // silent: the last step it beat
};

struct WorkerFailure {
  int attempt = 0;
  int local_rank = 0;
  pid_t pid = 0;
  proc::ExitStatus status;
  std::chrono::system_clock::time_point detected;
  std::optional<HangNote> hang;  // set when the agent killed it as hung
  // Set when it is stuck (it outlived SIGKILL, or sat in D state too long): what the report
  // says, e.g. "outlived SIGKILL by 15.0 s: pid 7, state D (disk sleep), wait channel
  // request_wait_answer". The job must not restart for such a failure.
  std::optional<std::string> stuck;
};

struct Outcome {
  enum class Kind { kSucceeded, kFailed, kInterrupted, kError };
  Kind kind = Kind::kSucceeded;
  int signal = 0;                       // kInterrupted: the signal that stopped the agent
  std::vector<WorkerFailure> failures;  // kFailed: the failures of the last attempt
  Status error;                         // kError
};

struct SupervisorOptions {
  int nproc = 1;
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
  // How long a worker may outlive the SIGKILL it was sent before it is given up.
  std::chrono::milliseconds kill_timeout{std::chrono::seconds(15)};
  // TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT: 0 = off.
  std::chrono::milliseconds uninterruptible_timeout{0};
  // How a worker's state is read (/proc; tests fake it).
  std::function<std::optional<proc::ProcessState>(pid_t)> inspect = proc::read_process_state;
};

class Supervisor {
 public:
  enum class Phase { kIdle, kRunning, kStopping, kDone };
  // Builds the command and environment of one worker of one attempt.
  using MakeSpec = std::function<proc::LaunchSpec(int attempt, int local_rank)>;
  // Runs before an attempt's workers start (log directories); an error ends the run.
  using BeforeAttempt = std::function<Status(int attempt)>;
  using Done = std::function<void(const Outcome&)>;

  Supervisor(boost::asio::io_context& io, proc::ProcessLauncher& launcher,
             SupervisorOptions options, MakeSpec make_spec, BeforeAttempt before_attempt,
             Done done);
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the workers of `attempt` (the attempt directory and TORCHELASTIC_RESTART_COUNT).
  void start(int attempt);
  // From the launcher's observer.
  void on_exit(int local_rank, proc::ExitStatus status);
  // A signal the agent received: forwarded to every live worker group; the run ends
  // (no restart) once they exited, with exit code 128 + signal.
  void interrupt(int signal);
  // Second Ctrl-C: SIGKILL every live worker group now.
  void kill_now();
  // SIGKILLs `local_rank`'s group (a worker judged hung); its exit is awaited kill_timeout.
  void kill(int local_rank);
  // The agent judged `local_rank` hung and is about to kill it: its failure carries `note`.
  void mark_hung(int local_rank, HangNote note);

  Phase phase() const { return phase_; }
  int attempt() const { return attempt_; }
  // The current attempt's workers (its local ranks are 0..size-1).
  int size() const { return static_cast<int>(workers_.size()); }
  // The pid of the current attempt's `local_rank` (0 = not started, or no such rank).
  pid_t pid(int local_rank) const { return valid(local_rank) ? workers_[local_rank].pid : 0; }
  bool live(int local_rank) const { return valid(local_rank) && workers_[local_rank].live; }

 private:
  enum class StopReason { kFailure, kSignal, kError };
  void begin_attempt();
  void stop(int signal, StopReason reason);
  void after_stop();
  void end_attempt_groups();
  void signal_live(int signal);
  void finish(Outcome outcome);
  int live_count() const;
  WorkerFailure failure_of(int local_rank, proc::ExitStatus status) const;
  // Stuck workers: the bound on exits after SIGKILL, and the D-state samples.
  void await_kills();
  void give_up_on_killed();
  void sample_states();
  std::string describe(int local_rank) const;
  bool valid(int local_rank) const {
    return local_rank >= 0 && local_rank < static_cast<int>(workers_.size());
  }
  struct StuckNote {
    std::string what;
    std::chrono::system_clock::time_point since;
  };
  // One worker of the attempt, by local rank.
  struct Worker {
    pid_t pid = 0;  // 0: not started
    bool live = false;
    std::optional<HangNote> hang;    // the agent judged it hung (mark_hung)
    std::optional<StuckNote> stuck;  // it outlived SIGKILL, or sat in D state too long
    std::optional<std::chrono::steady_clock::time_point> killed_at;  // SIGKILL sent
    std::optional<std::chrono::steady_clock::time_point> d_since;    // first seen in D state
  };

  proc::ProcessLauncher& launcher_;
  SupervisorOptions options_;
  MakeSpec make_spec_;
  BeforeAttempt before_attempt_;
  Done done_;
  boost::asio::steady_timer grace_timer_;
  boost::asio::steady_timer kill_timer_;   // the earliest SIGKILL's bound; armed when pending
  boost::asio::steady_timer state_timer_;  // the next D-state sample
  bool kill_timer_armed_ = false;

  Phase phase_ = Phase::kIdle;
  StopReason reason_ = StopReason::kFailure;
  int stop_signal_ = 0;
  int attempt_ = 0;
  std::vector<Worker> workers_;
  std::vector<WorkerFailure> failures_;
  Status error_;
};

}  // namespace ddp::agent
