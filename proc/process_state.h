// What /proc says about one process (proc(5)): its scheduler state, its parent and the kernel
// function it sleeps in. Used to name a worker that SIGKILL cannot end and to see a worker
// stuck in uninterruptible sleep (docs/unkillable.md), and to walk a pid's ancestors.
//
// Reads files only; any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace ddp::proc {

struct ProcessState {
  char state = '?';   // field 3 of /proc/<pid>/stat: R, S, D, Z, T, t, X, I, P
  pid_t ppid = 0;     // field 4
  std::string wchan;  // /proc/<pid>/wchan; empty when it is not sleeping or cannot be read
  // The letter and the kernel's name for it, as /proc/<pid>/status shows it: "D (disk sleep)".
  std::string describe_state() const;
};

// nullopt when the process is gone (or reaped) or its stat cannot be read or parsed.
std::optional<ProcessState> read_process_state(pid_t pid);

}  // namespace ddp::proc
