// Progress heartbeats to the ddprun agent (docs/hangs.md). Under ddprun every worker is told
// a heartbeat channel (DDPRUN_HEARTBEAT_FILE, a FIFO the agent reads); a beat is one line
// holding the step number. With --hang-timeout, a worker that has beaten and then stays silent
// that long is judged hung: the agent takes every worker's stack, names the rank that stalled
// first and restarts or stops the job.
//
// DistributedDataParallel beats on its own once per training step, when this rank's backward
// pass is done and it starts waiting for the others' gradients (GradientReducer), with the
// count of such steps: a rank that stalls before its backward stays a step behind the others.
// Code outside DDP may call beat() itself.
//
// Cost: one non-blocking write(2) of a few bytes per beat; a beat that would block (the agent
// is not reading) is dropped. Without the variable (not under ddprun) beat() does nothing.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace ddp {

class Heartbeat {
 public:
  // The process's heartbeat, opened from DDPRUN_HEARTBEAT_FILE on first use.
  static Heartbeat& process();
  // One beat, with the step number when given.
  void beat(std::optional<std::int64_t> step = std::nullopt);
  bool enabled() const { return fd_ >= 0; }

  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  Heartbeat();
  int fd_ = -1;
};

}  // namespace ddp
