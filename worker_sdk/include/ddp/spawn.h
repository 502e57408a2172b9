// Starting the workers from inside the training program, as mp.spawn does in Python:
//
//   int main(int argc, char** argv) {
//     ... parse flags ...
//     return ddp::spawn({.nprocs = 2}, [&] { return train(flags); });
//   }
//
// The first call (the parent) starts `nprocs` fresh processes of the same program
// (/proc/self/exe with the same arguments) and waits for them; in each of those, the same
// spawn() call sees it is a spawned worker (DDP_SPAWN_WORKER=1) and just runs `worker`,
// returning its result, so main returns it as the worker's exit code (the marker is removed
// from the worker's environment first, so programs the worker starts are not workers). Workers get
// the environment ddprun would give: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR/MASTER_PORT of a TCPStore the parent of node 0 hosts on a port it holds for the
// whole run (port 0: any free port, single node only), TORCHELASTIC_USE_AGENT_STORE=True,
// TORCHELASTIC_RESTART_COUNT=0, and OMP_NUM_THREADS=1 when unset and nprocs > 1 (as torchrun).
// ddp::init() in the worker joins the job.
//
// Several nodes (the tutorials' --nodes --gpus --nr driver): run the program once per node
// with .nprocs = gpus, .nodes = nodes, .node_rank = nr, the same .master_addr and a fixed
// .master_port; world size = nodes x nprocs and rank = node_rank x nprocs + local rank
// (spawn_topology). Node 0's parent hosts the store.
//
// Failure semantics are mp.spawn's: the first worker that exits non-zero or is killed by a
// signal stops the others (SIGTERM to each worker's process group, `grace`, then SIGKILL);
// every worker is reaped; the parent prints which rank failed and how to stderr and returns
// that worker's exit code (128 + signal number for a signal). SIGINT, SIGTERM or SIGHUP to the
// parent (Ctrl-C) stops the workers the same way and returns 128 + that signal. Workers run
// in their own process groups with stdin from /dev/null, share the parent's stdout and stderr,
// and die with the parent (PR_SET_PDEATHSIG).
//
// Call spawn() from main's thread before any other thread exists (before LibTorch work that
// starts thread pools): the parent blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP in that thread
// and waits for them with sigwaitinfo, so signals must not be delivered to other threads.
// Bad options (nprocs < 1, several nodes without a port) and OS failures (fork, the store's
// port) are printed and return 2 before any worker starts.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"

namespace ddp {

struct SpawnOptions {
  int nprocs = 1;     // workers on this node (the tutorials' --gpus)
  int nodes = 1;      // --nodes
  int node_rank = 0;  // --nr
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port chosen and held by the parent (single node only)
  std::chrono::milliseconds grace = std::chrono::seconds(5);  // SIGTERM -> SIGKILL
};

struct SpawnTopology {
  int world_size = 0;
  int first_rank = 0;  // rank of this node's local rank 0
};

// world_size = nodes x nprocs, first_rank = node_rank x nprocs; kInvalidArgument when a count
// is < 1 or node_rank is outside [0, nodes).
Result<SpawnTopology> spawn_topology(const SpawnOptions& options);

// True in a process started by spawn().
bool is_spawned_worker();

// How a spawned run ended (parent side).
struct SpawnOutcome {
  int exit_code = 0;         // what the parent's main should return
  int failed_rank = -1;      // the first worker that failed, or -1
  int signal = 0;            // the signal that killed it, or the one that interrupted the parent
  bool interrupted = false;  // the parent got SIGINT/SIGTERM/SIGHUP
  std::string message;       // empty on success
};

// The parent's side without printing: starts the workers, waits, stops them on the first
// failure. Errors before any worker started come back as a Status.
Result<SpawnOutcome> run_spawned(const SpawnOptions& options);

// In a spawned worker: returns worker(). In the parent: run_spawned(), prints the message on
// failure, returns the exit code (2 for a Status).
int spawn(const SpawnOptions& options, const std::function<int()>& worker);

}  // namespace ddp
