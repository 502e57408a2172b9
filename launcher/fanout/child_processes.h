// The children of a launching ddprun (ssh clients, pbsdsh): spawned with posix_spawnp in their
// own process group (a terminal's Ctrl-C reaches only ddprun, which decides how to stop them),
// every signal back to its default and none blocked, stdout/stderr through pipes read by Asio.
// stdin is either /dev/null or a pipe this object holds open until close_stdin(): over ssh the
// remote agent's stdin, whose EOF stops it (--exit-on-stdin-eof). If this process dies, the
// kernel closes that pipe, so the remote agents stop even after a SIGKILL of ddprun.
// Exits are heard through a SIGCHLD signal_set and waitpid(pid, WNOHANG) per child.
//
// Threading: the io_context's single thread; events arrive on it, never from inside spawn().
// One instance at a time per process (it reaps its own children only, but owns SIGCHLD).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "proc/process_launcher.h"

namespace ddp::launcher::fanout {

class ChildProcesses {
 public:
  // `observer` gets each child's output (in order per stream), EOF of each stream and its
  // exit (after the output it wrote before exiting); it must outlive this object.
  ChildProcesses(boost::asio::io_context& io, proc::ProcessObserver& observer);
  // Closes the pipes; does not signal the children (stop them first).
  ~ChildProcesses();
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;

  // argv[0] is looked up on PATH; the environment is this process's. Errors: kIo (pipes,
  // spawn failure such as a missing program), naming the program.
  Result<pid_t> spawn(int id, const std::vector<std::string>& argv, bool stdin_pipe);
  // Closes the write end of `id`'s stdin pipe (the child reads EOF). Idempotent.
  void close_stdin(int id);
  // Sends `signal` to `id`'s process group, unless it exited already.
  void signal_group(int id, int signal);
  bool exited(int id) const;

 private:
  struct Child;
  void wait_readable(const std::shared_ptr<Child>& child, proc::StreamId stream);
  bool read_available(const std::shared_ptr<Child>& child, proc::StreamId stream);
  void wait_for_sigchld();
  void reap();

  boost::asio::io_context& io_;
  proc::ProcessObserver& observer_;
  boost::asio::signal_set sigchld_;
  std::map<int, std::shared_ptr<Child>> children_;
};

}  // namespace ddp::launcher::fanout
