// The environment of one worker, as torchrun 2.14 gives it (torchrun 1.13's, with the NCCL
// setting under its TORCH_ name and TORCHELASTIC_SIGNALS_TO_HANDLE). A pure function: no I/O, no
// globals; the caller passes the agent's own environment in.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ddp::agent {

using EnvMap = std::map<std::string, std::string>;

// What the rendezvous and the current attempt decided; the same for every local rank.
struct GroupContext {
  std::string role = "default";
  int local_world_size = 1;  // workers on this node
  int group_rank = 0;        // this node's rank
  int group_world_size = 1;  // nodes in the job
  int global_rank_base = 0;  // global rank of this node's local rank 0
  int world_size = 1;        // workers in the job
  std::string master_addr;   // the worker store
  int master_port = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string run_id;
  bool use_agent_store = true;
  // CUDA_VISIBLE_DEVICES: the whole selection in order (cuda:LOCAL_RANK is the chosen GPU);
  // with virtual_local_rank each worker sees only its own id and gets LOCAL_RANK=0, as
  // torchrun's --virtual-local-rank. Empty: CUDA_VISIBLE_DEVICES is left as inherited.
  std::vector<int> gpu_ids;
  bool virtual_local_rank = false;
  // TORCHELASTIC_SIGNALS_TO_HANDLE, as torchrun >= 2.9 sets it: "SIGTERM,SIGINT,SIGHUP,SIGQUIT".
  std::string signals_to_handle;
};

// base: the agent's environment. error_file: this worker's TORCHELASTIC_ERROR_FILE.
// Variables the agent owns overwrite inherited ones; OMP_NUM_THREADS and
// TORCH_NCCL_ASYNC_ERROR_HANDLING keep an inherited value.
EnvMap make_worker_env(const EnvMap& base, const GroupContext& group, int local_rank,
                       const std::string& error_file);

// True when the agent sets OMP_NUM_THREADS=1 itself (unset and more than one worker);
// the agent prints its one-line notice when this holds.
bool sets_omp_num_threads(const EnvMap& base, int local_world_size);

// The process environment as a map (reads `environ`; not pure, used by run()).
EnvMap current_environment();

// "KEY=VALUE" strings for execve.
std::vector<std::string> to_envp(const EnvMap& env);

}  // namespace ddp::agent
