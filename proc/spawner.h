// The process library's one spawner, for the agent's workers and the fan-out's ssh/pbsdsh
// children: the real ProcessLauncher, on Boost.Process v2.
//
// Spawning: Boost.Process's fork_and_forget_launcher forks (from a private io_context with
// nothing of ours registered, so the child runs none of this process's Asio state) and its
// exec-setup hook runs proc::prepare_child (child_setup.h) in the child: own session (setsid)
// or process group (setpgid), PR_SET_PDEATHSIG(SIGKILL) plus the getppid() check, stdin from
// /dev/null or a pipe, stdout/stderr into pipes, every signal back to SIG_DFL and unblocked,
// every other descriptor close-on-exec. Every signal is blocked in this thread across the
// fork, so no handler of this process runs in the child.
// spawn() does not wait for the program to load, so a whole group starts in parallel (Boost's
// default_launcher waits for each exec: that serialised a group's start and doubled the
// restart latency, see docs/benchmarks.md). An exec failure sends its errno through a
// close-on-exec pipe of ours and the child leaves with _exit(127): ExecFailure::kExit127 logs
// "cannot run '<program>': <strerror>" when the exit is heard; ExecFailure::kError makes
// spawn() wait for the exec (read that pipe to EOF) and return the error, the child reaped
// unseen. argv[0] is looked up on this process's PATH (as execvp does); one that is not found
// fails in the child with ENOENT, like any exec failure. A signal_group() that comes before
// the child made its group goes to the child itself (still blocked there, so it takes effect).
//
// Exits: one owner of child exits. Each child is waited for by its pidfd with async_wait on
// the io_context (waitpid of that pid only); nothing handles SIGCHLD and nothing calls
// waitpid(-1). Everything a child wrote before it exited is delivered before on_exit.
//
// Orphans (SpawnerOptions::adopt_orphans): this process becomes a child subreaper, so
// grandchildren orphaned by a child are re-parented here instead of to init. They are not
// this spawner's children: kill_strays() SIGKILLs them and a StrayReaper reaps them by
// pid(fd); until then one that ends by itself stays a zombie. The death watch's process is
// left alone (its owner reaps it).
//
// Threading: the io_context's single thread; events arrive on it, never from inside a call.
// Owns every pipe it opens and its children's pidfds; the observer must outlive the spawner.
// Destroying it stops the events but neither signals nor abandons reaping of live children.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>

#include "proc/death_watch.h"
#include "proc/process_launcher.h"
#include "proc/stray_reaper.h"

namespace ddp::proc {

struct SpawnerOptions {
  DeathWatch* death_watch = nullptr;  // may be null; told about every process group so it
                                      // can kill them if this process is SIGKILLed
  bool adopt_orphans = false;         // become the child subreaper (the agent)
};

class Spawner final : public ProcessLauncher {
 public:
  Spawner(boost::asio::io_context& io, ProcessObserver& observer, SpawnerOptions options = {});
  ~Spawner() override;
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  Result<pid_t> spawn(int id, const LaunchSpec& spec) override;
  void close_stdin(int id) override;
  // Writes `bytes` to child `id`'s stdin pipe at once (a few bytes that fit the pipe buffer,
  // e.g. a job secret; never blocks for long). kNotFound without a pipe, kIo on error.
  Status write_stdin(int id, std::string_view bytes);
  void signal_group(int id, int signal) override;
  void release(int id) override;
  // SIGKILLs every child of this process that is not one of this spawner's (re-parented
  // grandchildren), except the death watch, and reaps them as they die.
  void kill_strays() override;

 private:
  struct Child;
  void wait_exit(const std::shared_ptr<Child>& child);
  void on_child_exit(const std::shared_ptr<Child>& child, int wait_status);
  void wait_readable(const std::shared_ptr<Child>& child, StreamId stream);
  // Reads what is available now; returns false at EOF or error.
  bool read_available(const std::shared_ptr<Child>& child, StreamId stream);

  boost::asio::io_context& io_;
  boost::asio::io_context fork_context_;  // Boost.Process forks "from" it: nothing registered
  ProcessObserver& observer_;
  SpawnerOptions options_;
  StrayReaper strays_;
  std::map<int, std::shared_ptr<Child>> children_;  // by caller id
};

}  // namespace ddp::proc
