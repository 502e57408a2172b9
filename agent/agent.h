// The per-node agent: runs this node's part of a job to completion.
//
// run() owns the process-wide signal handling (the one place that handles signals),
// hosts the embedded rendezvous/worker store, spawns one worker per local rank,
// supervises them, restarts the group while restarts remain, and tears everything
// down before returning. It blocks the calling thread (it runs its own io_context).
#pragma once

#include "agent/config.h"

namespace ddp::agent {

// Returns the exit code ddprun exits with: the job's (the same on every node): 0 when every
// worker succeeded, on failure the root-cause worker's exit code (128 + signal number when it
// was killed by a signal) or the no-progress exit code; 128 + signal number when ddprun itself
// was stopped by a forwarded signal; 1 when this node lost the job or for an agent error (a
// message has been logged); 2 for bad input refused before anything started (one line on
// stderr: the event log path, the rendezvous settings, the job secret).
int run(const AgentConfig& config);

}  // namespace ddp::agent
