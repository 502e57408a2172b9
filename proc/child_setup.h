// What a spawned child does in itself between fork and exec (proc::Spawner runs it from
// Boost.Process's exec-setup hook). Runs in the forked child of a process that may hold
// locks and Asio state: only async-signal-safe calls, no allocation, no logging.
//
// On entry every signal is blocked (the spawner blocked them across fork, so no handler of
// the parent, such as Asio's, can run in the child). In order: new session or process group;
// PR_SET_PDEATHSIG(SIGKILL) plus the getppid() check; stdin/stdout/stderr; every signal back
// to SIG_DFL (but `ignored_signal`), then none blocked; every descriptor from 3 up marked
// close-on-exec; the soft open-file limit set back when the parent raised its own
// (proc/open_file_limit.h); the CPU affinity and the memory policy (--numa-binding) when
// given.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "proc/process_launcher.h"

namespace ddp::proc {

struct ChildSetup {
  GroupMode group = GroupMode::kNewSession;
  bool die_with_parent = true;
  pid_t parent = 0;  // the spawning process, for the getppid() check
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  rlim_t open_file_soft_limit = 0;  // nonzero: the child's soft RLIMIT_NOFILE
  int ignored_signal = 0;           // nonzero: SIG_IGN for it instead of SIG_DFL
  int forced_errno = 0;  // nonzero: fail with it instead of running (program not on PATH)
  // Not null: sched_setaffinity(0, ...) to this set (built by the parent; outlives the fork).
  const cpu_set_t* cpu_affinity = nullptr;
  // Not null: set_mempolicy to prefer these nodes (a bit mask of memory_maxnode bits, built by
  // the parent): MPOL_PREFERRED for one node, MPOL_PREFERRED_MANY for several (Linux 5.15+;
  // an older kernel's EINVAL falls back to MPOL_PREFERRED, the lowest node). Never MPOL_BIND:
  // a bound worker whose nodes run out of memory is OOM-killed while other nodes have room.
  const unsigned long* memory_nodes = nullptr;
  unsigned long memory_maxnode = 0;
  bool several_memory_nodes = false;
};

// Returns 0 when the child is ready to exec, or an errno (also left in errno) that the
// caller reports to the parent. Exits with 127 itself when the parent died before
// PR_SET_PDEATHSIG took effect.
int prepare_child(const ChildSetup& setup) noexcept;

}  // namespace ddp::proc
