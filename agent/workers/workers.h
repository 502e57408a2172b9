// The seam between the agent's policy (agent_machine.h) and this node's worker processes: start
// one round's group, stop it, and hear once how it ended. SupervisedWorkers is the real one
// (a Supervisor per round over proc::Spawner); tests use a fake.
//
// Contract: start() begins a group for `round` (the previous group has ended). Exactly one
// on_workers_done follows each start(), on the io_context thread, never inside start(): when
// every worker exited 0, after the first failure stopped the rest, after stop(), or when a
// worker could not be started. stop(sig) sends `sig` to every live worker, then SIGKILL after
// the shutdown timeout; kill_now() SIGKILLs at once. Both are no-ops without a live group.
//
// Threading: the agent's io_context thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/membership/rendezvous_backend.h"
#include "agent/workers/supervisor.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

// The exit code a worker judged hung by its silence reports (as timeout(1) does); a worker
// killed by torchrun's file timer reports the signal it asked for (128 + signal).
constexpr int kHangExitCode = 124;

// Workers judged hung, by the heartbeat watch or torchrun's file timer (docs/hangs.md).
struct HangReport {
  enum class Kind { kSilent, kTimer };
  Kind kind = Kind::kSilent;
  // kSilent: the hung workers' local ranks, the one that stalled first first, and what each
  // did last ("rank 1 last beat at step 4 (3.0 s ago); the other rank here reached step 5").
  std::vector<int> local_ranks;
  std::vector<std::string> descriptions;
  std::vector<std::chrono::system_clock::time_point> stalled;  // when each stalled (or expiry)
  std::vector<std::optional<std::int64_t>> steps;              // kSilent: the last step each beat
  // kTimer: the process the expired timer names (a worker or one of its descendants), its
  // scope and the signal it asked for.
  pid_t pid = 0;
  std::string scope;
  int signal = 0;
};

struct WorkersResult {
  Outcome outcome;
  // outcome.kind == kFailed: one per failed worker, in the rendezvous's vocabulary (global
  // rank, exit code, time, error file and message); kError: one naming this node's error.
  std::vector<rendezvous::membership::Failure> failures;
};

class WorkerEvents {
 public:
  virtual ~WorkerEvents() = default;
  virtual void on_workers_done(const WorkersResult& result) = 0;
  // Some workers of the running group are hung; the group keeps running until the policy acts.
  virtual void on_workers_hung(const HangReport& report) = 0;
  // A worker of the running group beat a new step (docs/progress.md); Workers::progress()
  // tells how far the group got. Any number of times: cheap to receive.
  virtual void on_workers_progress() = 0;
};

class Workers {
 public:
  virtual ~Workers() = default;
  // `events` must outlive this object; set once, before the first start().
  virtual void set_events(WorkerEvents& events) = 0;
  virtual void start(const Round& round) = 0;
  virtual void stop(int signal) = 0;
  virtual void kill_now() = 0;
  // Ends the group for a hang: the stacks of every live worker first, then the hung ones are
  // killed (SIGKILL, or the timer's signal) and their failures carry the report; the rest
  // stop as for any failure. on_workers_done follows.
  virtual void abort_hung(const HangReport& report) = 0;
  // A worker on another node was judged hung and the job stops the round: this group's workers
  // silent for long enough to have stalled with it (hang_judge.h, hung_beside) are judged hung
  // too, so that the rendezvous compares how far each got (the culprit is the lowest step, not
  // the node that noticed first). Their report for abort_hung, or nullopt: none, no hang
  // detection, no group running, or this group was judged already. Reports nothing itself.
  virtual std::optional<HangReport> judge_hang_elsewhere() = 0;
  // How far the current (or last) group's workers got, from their heartbeats (Progress of its
  // round): the ranks that beat a step (none: no step beaten yet) and its stepping time.
  virtual rendezvous::membership::Progress progress() const = 0;
};

}  // namespace ddp::agent
