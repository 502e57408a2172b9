// One node of a multi-node job (c10d or static backend): hosts the rendezvous daemon in-process
// when it is the endpoint host (torchrun's is_host inference), joins through
// rendezvous::RdzvClient, and runs one local worker group per rendezvous round as the daemon says
// (RoundComplete starts it, StopWorkers stops it, JobFinished ends the agent with the job's exit
// code).
//
// Static backend (--rdzv-backend static, --nnodes N > 1): the same, with node rank 0 hosting
// the daemon on --master-addr:--master-port (also the workers' store, their MASTER_ADDR/PORT),
// every node joining with its --node-rank pinned as its group rank, and the other nodes
// retrying to reach node rank 0 until join_timeout (docs/multinode_static.md).
//
// Threading: run_multinode() blocks; everything runs on its one io_context thread.
#pragma once

#include "agent/config.h"
#include "agent/run_setup.h"
#include "proc/death_watch.h"

namespace ddp::agent {

// Returns the exit code: the job's (the same on every node), 128 + signal when this agent
// was stopped by a signal (it LEAVEs; the job goes on without it), 1 for an agent error
// (daemon unreachable or lost, rendezvous refused: one message logged).
int run_multinode(const AgentConfig& config, RunSetup& setup, proc::DeathWatch& death_watch);

}  // namespace ddp::agent
