// The seam in front of every process-related OS effect the agent has: spawning a
// worker, signalling its process group, and hearing about its output and its exit.
// The supervisor (policy) talks only to this interface; PosixProcessLauncher is the
// real thing, tests use a fake.
//
// Threading: single thread. Events are delivered on the agent's io_context thread, never
// from inside spawn()/signal_group().
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "proc/exit_status.h"

namespace ddp::proc {

enum class StreamId { kStdout = 1, kStderr = 2 };

// Receives what launched processes do. `id` is the caller's id given to spawn().
// For one id: on_output calls come in byte order per stream; every byte the process
// wrote before it exited is delivered before on_exit; on_output_end comes at EOF of a
// stream (possibly after on_exit when a grandchild still holds the pipe).
class ProcessObserver {
 public:
  virtual ~ProcessObserver() = default;
  virtual void on_output(int id, StreamId stream, std::string_view bytes) = 0;
  virtual void on_output_end(int id, StreamId stream) = 0;
  virtual void on_exit(int id, ExitStatus status) = 0;
};

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts a process in its own session/process group with stdin from /dev/null and
  // stdout/stderr captured. Returns its pid without waiting for the program to load.
  // Errors: kIo when the OS refuses (pipes, fork). A program that cannot be executed
  // exits with code 127 (as in a shell) after the launcher logged why.
  virtual Result<pid_t> spawn(int id, const LaunchSpec& spec) = 0;

  // Sends `signal` to the process group of `id` (the process and what it started that
  // stayed in its group). A group that is gone already is not an error.
  virtual void signal_group(int id, int signal) = 0;

  // Forgets `id`: stops reading its output. Call after its on_exit.
  virtual void release(int id) = 0;

  // SIGKILLs what workers left behind outside their process groups (orphans re-parented to
  // the agent), leaving live workers alone.
  virtual void kill_strays() = 0;
};

}  // namespace ddp::proc
