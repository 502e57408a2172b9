// The real ProcessLauncher: fork + exec the ninja way, children in their own session
// (process group = pid), PR_SET_PDEATHSIG(SIGKILL) so a worker dies with the agent,
// stdin from /dev/null, stdout/stderr through pipes read by Asio, exits heard through a
// SIGCHLD signal_set and a waitpid(-1, WNOHANG) loop (no polling). The agent process is
// made a child subreaper, so grandchildren orphaned by a worker are reparented here and
// reaped (and killed by kill_strays()).
//
// Threading: the io_context's single thread. Owns every pipe it opens; the observer must
// outlive the launcher. Only one PosixProcessLauncher per process (it reaps every child).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <map>
#include <memory>

#include "proc/death_watch.h"
#include "proc/process_launcher.h"

namespace ddp::proc {

class PosixProcessLauncher final : public ProcessLauncher {
 public:
  // death_watch (may be null) is told about every process group so it can kill them
  // if this process is SIGKILLed.
  PosixProcessLauncher(boost::asio::io_context& io, ProcessObserver& observer,
                       DeathWatch* death_watch);
  ~PosixProcessLauncher() override;
  PosixProcessLauncher(const PosixProcessLauncher&) = delete;
  PosixProcessLauncher& operator=(const PosixProcessLauncher&) = delete;

  Result<pid_t> spawn(int id, const LaunchSpec& spec) override;
  void signal_group(int id, int signal) override;
  void release(int id) override;

  // SIGKILLs every child of this process that is not a live worker (re-parented
  // grandchildren), except the death watch. They are reaped as they die.
  void kill_strays() override;

 private:
  struct Child;
  void wait_for_sigchld();
  void reap();
  void wait_readable(const std::shared_ptr<Child>& child, StreamId stream);
  // Reads what is available now; returns false at EOF or error.
  bool read_available(const std::shared_ptr<Child>& child, StreamId stream);

  boost::asio::io_context& io_;
  ProcessObserver& observer_;
  DeathWatch* death_watch_;
  boost::asio::signal_set sigchld_;
  std::map<int, std::shared_ptr<Child>> children_;  // by caller id
};

}  // namespace ddp::proc
