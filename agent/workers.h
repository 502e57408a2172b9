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

#include <vector>

#include "agent/rendezvous_backend.h"
#include "agent/supervisor.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

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
};

class Workers {
 public:
  virtual ~Workers() = default;
  // `events` must outlive this object; set once, before the first start().
  virtual void set_events(WorkerEvents& events) = 0;
  virtual void start(const Round& round) = 0;
  virtual void stop(int signal) = 0;
  virtual void kill_now() = 0;
};

}  // namespace ddp::agent
