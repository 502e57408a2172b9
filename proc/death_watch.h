// Kills the workers' process groups when the agent dies without cleaning up (SIGKILL,
// OOM killer). start() forks a small watcher process before any worker exists; the agent
// tells it each process group it creates through a pipe whose write end only the agent
// holds (close-on-exec, so workers never inherit it). When that pipe reaches EOF (the
// agent is gone, or destroyed this object) the watcher SIGKILLs every group still
// registered, which takes grandchildren in those groups too, and exits.
//
// Processes that left those groups (setsid) are found by their environment: the watcher
// also SIGKILLs every process whose environment holds all the "KEY=VALUE" marks given
// (a single-node agent marks TORCHELASTIC_RUN_ID and MASTER_PORT, unique while its store port
// is held; a multi-node one TORCHELASTIC_RUN_ID and DDPRUN_AGENT_ID, its address and pid).
//
// Last words: start() may take a function the watcher runs once the agent is gone, after the
// kills, with the note the agent left last (set_last_words; nothing runs while none is set or
// after clear_last_words). The etcd backend revokes its lease this way, so the job hears of a
// SIGKILLed agent at once rather than when the lease expires. The function is copied into the
// watcher at fork: it must not rely on threads or on descriptors of the agent (the watcher
// keeps none), and should bound its own time.
//
// The watcher ignores the terminal's signals (INT, TERM, HUP, QUIT, USR1, USR2) so the
// agent decides what happens to the workers while it lives, and runs in its own process
// group, so a kill of the agent's group (kill -9 -PGID) leaves it to do its work.
//
// Threading: any single thread. Not copyable.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace ddp::proc {

class DeathWatch {
 public:
  using LastWords = std::function<void(const std::string& note)>;

  // Forks the watcher. Call while the process has one thread.
  static Result<std::unique_ptr<DeathWatch>> start(LastWords last_words = nullptr);
  ~DeathWatch();  // closes the pipe: the watcher kills what is registered and exits
  DeathWatch(const DeathWatch&) = delete;
  DeathWatch& operator=(const DeathWatch&) = delete;

  void add_group(pid_t pgid);
  void remove_group(pid_t pgid);
  void add_environment_mark(const std::string& key_value);
  // The note last_words gets if the agent dies now (replaces any earlier one; non-empty).
  void set_last_words(const std::string& note);
  void clear_last_words();
  pid_t pid() const { return pid_; }

 private:
  DeathWatch(pid_t pid, int write_fd) : pid_(pid), write_fd_(write_fd) {}
  void send(std::int32_t record);
  void send_text(char kind, const std::string& text);
  pid_t pid_;
  int write_fd_;
};

}  // namespace ddp::proc
