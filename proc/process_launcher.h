// The seam in front of every process-related OS effect the agent and the fan-out have:
// spawning a worker or an ssh/pbsdsh child, signalling its process group, and hearing about
// its output and its exit. The supervisor (policy) talks only to this interface; proc::Spawner
// (proc/spawner.h) is the real thing, tests use a fake.
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

// How the child's stdin is set up.
enum class StdinMode {
  kNull,  // /dev/null
  kPipe,  // a pipe the launcher holds open until close_stdin(id) or the exit: EOF is a message
};

// Which process group the child gets; either way signal_group() reaches the group.
enum class GroupMode {
  kNewSession,  // setsid(): own session and group (workers: no controlling terminal)
  kNewGroup,    // setpgid(0, 0): own group in this session (fan-out's ssh/pbsdsh children)
};

// What a program that cannot be executed (not found, not executable, bad interpreter) does.
enum class ExecFailure {
  kExit127,  // spawn() succeeds; one line is logged naming the program and the errno, and the
             // process exits with 127, as in a shell (workers: it goes down the failure path)
  kError,    // spawn() returns kIo naming the program and the errno; no events for `id`
};

// `LaunchSpec{argv, env}` is a worker: the defaults below.
struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment (unless inherit_env)
  StdinMode stdin_mode = StdinMode::kNull;
  GroupMode group = GroupMode::kNewSession;
  bool die_with_parent = true;  // PR_SET_PDEATHSIG(SIGKILL): the child dies with this process
  bool inherit_env = false;     // true: this process's environment, `env` is ignored
  // Nonzero: the child starts with this signal ignored (every other one at its default). The
  // agent's stack signal: one that reaches a Python worker before its startup hook registered
  // faulthandler for it, or after interpreter shutdown unregistered it, must not kill it
  // (faulthandler restores the disposition it found: ignored).
  int ignored_signal = 0;
  ExecFailure exec_failure = ExecFailure::kExit127;
  // Non-empty: the logical CPUs the child is bound to (sched_setaffinity before exec); a CPU
  // the kernel refuses fails the spawn like an exec failure. Empty: the parent's affinity.
  std::vector<int> cpu_affinity{};
  // Non-empty: the NUMA nodes the child's memory prefers (proc/child_setup.h says how); a
  // policy the kernel refuses fails the spawn the same way. Empty: the default policy.
  std::vector<int> memory_nodes{};
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts a process as `spec` says (own session or group, stdin, environment) with
  // stdout/stderr captured. Returns its pid without waiting for the program to load (except
  // with ExecFailure::kError, which waits for the exec).
  // Errors: kIo when the OS refuses (pipes, fork); kInvalidArgument for an empty argv; a
  // program that cannot be executed as spec.exec_failure says.
  virtual Result<pid_t> spawn(int id, const LaunchSpec& spec) = 0;

  // Closes this side of `id`'s stdin pipe (StdinMode::kPipe): the child reads EOF.
  // Idempotent; nothing for an unknown id or a child without a stdin pipe.
  virtual void close_stdin(int id) = 0;

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
