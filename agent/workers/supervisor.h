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
  // Pids of the current attempt, by local rank (0 = not started).
  const std::vector<pid_t>& pids() const { return pids_; }
  bool live(int local_rank) const {
    return local_rank >= 0 && local_rank < static_cast<int>(live_.size()) && live_[local_rank];
  }

 private:
  enum class StopReason { kFailure, kSignal, kError };
  void begin_attempt();
  void stop(int signal, StopReason reason);
  void after_stop();
  void end_attempt_groups();
  void finish(Outcome outcome);
  int live_count() const;
  WorkerFailure failure_of(int local_rank, proc::ExitStatus status) const;
  // Stuck workers: the bound on exits after SIGKILL, and the D-state samples.
  void await_kills();
  void give_up_on_killed();
  void sample_states();
  std::string describe(int local_rank) const;
  struct StuckNote {
    std::string what;
    std::chrono::system_clock::time_point since;
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
  std::vector<pid_t> pids_;
  std::vector<bool> live_;
  std::vector<WorkerFailure> failures_;
  std::vector<std::optional<HangNote>> hang_notes_;                              // by local rank
  std::vector<std::optional<StuckNote>> stuck_;                                  // by local rank
  std::vector<std::optional<std::chrono::steady_clock::time_point>> killed_at_;  // SIGKILL sent
  std::vector<std::optional<std::chrono::steady_clock::time_point>> d_since_;    // first seen D
  Status error_;
};

}  // namespace ddp::agent
