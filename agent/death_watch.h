// Kills the workers' process groups when the agent dies without cleaning up (SIGKILL,
// OOM killer). start() forks a small watcher process before any worker exists; the agent
// tells it each process group it creates through a pipe whose write end only the agent
// holds (close-on-exec, so workers never inherit it). When that pipe reaches EOF (the
// agent is gone, or destroyed this object) the watcher SIGKILLs every group still
// registered, which takes grandchildren in those groups too, and exits.
//
// The watcher ignores the terminal's signals (INT, TERM, HUP, QUIT, USR1, USR2) so the
// agent decides what happens to the workers while it lives.
//
// Threading: any single thread. Not copyable.
#pragma once

#include <sys/types.h>

#include <memory>

#include "common/status.h"

namespace ddp::agent {

class DeathWatch {
 public:
  // Forks the watcher. Call while the process has one thread.
  static Result<std::unique_ptr<DeathWatch>> start();
  ~DeathWatch();  // closes the pipe: the watcher kills what is registered and exits
  DeathWatch(const DeathWatch&) = delete;
  DeathWatch& operator=(const DeathWatch&) = delete;

  void add_group(pid_t pgid);
  void remove_group(pid_t pgid);
  pid_t pid() const { return pid_; }

 private:
  DeathWatch(pid_t pid, int write_fd) : pid_(pid), write_fd_(write_fd) {}
  void send(int record);
  pid_t pid_;
  int write_fd_;
};

}  // namespace ddp::agent
