// Progress heartbeats to the ddprun agent (docs/hangs.md). Under ddprun every worker is told
// a heartbeat channel (DDPRUN_HEARTBEAT_FILE, a FIFO the agent reads); a beat is one line
// holding the step number. With --hang-timeout, a worker that has beaten and then stays silent
// that long is judged hung: the agent takes every worker's stack, names the rank that stalled
// first and restarts or stops the job.
//
// DistributedDataParallel beats on its own: when a training step's forward pass begins
// (begin_step(): the step count goes up) and again when this rank's backward pass is done and
// it starts waiting for the others' gradients (beat()). A rank that stalls before its forward
// stays a step behind the others; one that stalls inside its step beats that step's number
// last, and earlier than the ranks that reached its gradient exchange. Code outside DDP may
// call begin_step()/beat() itself.
//
// Cost: one non-blocking write(2) of a few bytes per beat; a beat that would block (the agent
// is not reading) is dropped. Without the variable (not under ddprun) beat() does nothing.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace ddp {

class Heartbeat {
 public:
  // The process's heartbeat, opened from DDPRUN_HEARTBEAT_FILE on first use.
  static Heartbeat& process();
  // A new step begins: the step count goes up by one and is beaten.
  void begin_step();
  // One beat with the current step count.
  void beat();
  // One beat with a step number of the caller's own.
  void beat(std::int64_t step);
  std::int64_t step() const { return step_.load(); }
  bool enabled() const { return fd_ >= 0; }

  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  Heartbeat();
  void write_step(std::int64_t step);
  int fd_ = -1;
  std::atomic<std::int64_t> step_{0};
};

}  // namespace ddp
