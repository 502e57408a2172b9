// One node of a multi-node c10d job: hosts the rendezvous daemon in-process when it is the
// endpoint host (torchrun's is_host inference), joins through rdzv::RdzvClient, and runs one
// local worker group per rendezvous round as the daemon says (RoundComplete starts it,
// StopWorkers stops it, JobFinished ends the agent with the job's exit code).
//
// Threading: run_multinode() blocks; everything runs on its one io_context thread.
#pragma once

#include "agent/config.h"
#include "agent/death_watch.h"
#include "agent/run_setup.h"

namespace ddp::agent {

// Returns the exit code: the job's (the same on every node), 128 + signal when this agent
// was stopped by a signal (it LEAVEs; the job goes on without it), 1 for an agent error
// (daemon unreachable or lost, rendezvous refused: one message logged).
int run_multinode(const AgentConfig& config, RunSetup& setup, DeathWatch& death_watch);

}  // namespace ddp::agent
