// What one node's run decides before any worker starts: the rendezvous result (single
// node: this node is group rank 0 of 1 and hosts the worker store), the run id, the log
// directory, and how each worker of each attempt is launched.
//
// prepare_run() reads the process environment and creates the log directory; the
// methods of RunSetup are pure.
#pragma once

#include <filesystem>
#include <string>

#include "agent/config.h"
#include "agent/workers/worker_env.h"
#include "common/status.h"
#include "proc/process_launcher.h"

namespace ddp::agent {

struct RunSetup {
  EnvMap base_env;
  GroupContext group;  // master_port is filled once the worker store is listening
  std::filesystem::path log_dir;
  std::string hostname;
  std::vector<std::string> worker_argv;
  std::vector<std::vector<int>> cpu_affinity;  // per local rank (--numa-binding); may be empty
  std::vector<std::vector<int>> memory_nodes;  // likewise

  std::filesystem::path attempt_dir(int attempt) const;
  std::filesystem::path error_file(int attempt, int local_rank) const;
  // The worker's command is worker_argv with torchrun's ${local_rank} macro substituted
  // (agent/workers/worker_args.h).
  proc::LaunchSpec launch_spec(int attempt, int local_rank) const;
};

// Errors: kInvalidArgument for what this agent cannot run (no command); kIo when the log directory
// cannot be created (naming it).
Result<RunSetup> prepare_run(const AgentConfig& config);

// More than one node (--nnodes above 1): the rendezvous decides ranks (a NativeLink or an
// EtcdLink, agent/membership/; with the static backend each node pins its own, --node-rank).
// An agent a launching ddprun started over ssh (--exit-on-stdin-eof) always joins that
// ddprun's rendezvous, even as the only node: the job's result is the launcher's exit code.
inline bool is_multinode(const AgentConfig& config) {
  return !config.standalone &&
         (config.job.min_nodes > 1 || config.job.max_nodes > 1 || config.exit_on_stdin_eof);
}

}  // namespace ddp::agent
