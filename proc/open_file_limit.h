// The open-file limit of a process that hosts servers (one descriptor per client: the agent's
// rendezvous daemon, its workers' store with one connection per worker of the job; the
// standalone ddp-rendezvous) and of the programs it starts.
//
// raise_open_file_limit() lifts this process's soft RLIMIT_NOFILE to its hard limit and
// remembers the soft limit it had. proc::Spawner's children get that remembered soft limit
// back before they exec, so workers run with the limit the user's shell gave (as under
// torchrun): a program that uses select() never sees a descriptor above 1023 because of us.
//
// Threading: call raise_open_file_limit() once, early, on the main thread, before children are
// spawned. children_open_file_limit() is read by the spawner in the parent, before fork.
#pragma once

#include <sys/resource.h>

namespace ddp::proc {

// The soft limit in force afterwards (unchanged when it already equals the hard one or the
// kernel refuses; never fails).
rlim_t raise_open_file_limit();

// The soft limit children should get: the one this process had before
// raise_open_file_limit() raised it, or 0 when it did not (children inherit as usual).
rlim_t children_open_file_limit();

}  // namespace ddp::proc
