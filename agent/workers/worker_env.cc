#include "agent/workers/worker_env.h"

#include <unistd.h>

#include <string_view>

namespace ddp::agent {
namespace {

std::string join_ids(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

}  // namespace

bool sets_omp_num_threads(const EnvMap& base, int local_world_size) {
  return local_world_size > 1 && !base.contains("OMP_NUM_THREADS");
}

EnvMap make_worker_env(const EnvMap& base, const GroupContext& group, int local_rank,
                       const std::string& error_file) {
  EnvMap env = base;
  const int rank = group.global_rank_base + local_rank;
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["RANK"] = std::to_string(rank);
  env["GROUP_RANK"] = std::to_string(group.group_rank);
  // One role per job: role ranks and sizes equal the global ones.
  env["ROLE_RANK"] = std::to_string(rank);
  env["ROLE_NAME"] = group.role;
  env["LOCAL_WORLD_SIZE"] = std::to_string(group.local_world_size);
  env["WORLD_SIZE"] = std::to_string(group.world_size);
  env["GROUP_WORLD_SIZE"] = std::to_string(group.group_world_size);
  env["ROLE_WORLD_SIZE"] = std::to_string(group.world_size);
  env["MASTER_ADDR"] = group.master_addr;
  env["MASTER_PORT"] = std::to_string(group.master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(group.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(group.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = group.run_id;
  env["TORCHELASTIC_USE_AGENT_STORE"] = group.use_agent_store ? "True" : "False";
  env["TORCHELASTIC_ERROR_FILE"] = error_file;
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = group.signals_to_handle;
  // As torchrun 2.x: only the TORCH_ name (>= 2.2 warns about the old one). A worker on an
  // older torch gets the old name from the Python hook or the worker SDK.
  env.try_emplace("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  // The literals below are assigned as std::string temporaries (move assignment): assigning a
  // const char* inlines basic_string::_M_replace, where GCC 12 reports a -Wrestrict false
  // positive (GCC bug 105329).
  if (sets_omp_num_threads(base, group.local_world_size)) {
    env["OMP_NUM_THREADS"] = std::string("1");
  }
  if (group.virtual_local_rank) {
    // As torchrun's --virtual-local-rank: the worker sees only its own GPU, as cuda:0, and
    // LOCAL_RANK=0; without selected GPUs torchrun names the device by the local rank.
    const bool has_id = local_rank < static_cast<int>(group.gpu_ids.size());
    env["CUDA_VISIBLE_DEVICES"] = std::to_string(has_id ? group.gpu_ids[local_rank] : local_rank);
    env["LOCAL_RANK"] = std::string("0");
  } else if (!group.gpu_ids.empty()) {
    env["CUDA_VISIBLE_DEVICES"] = join_ids(group.gpu_ids);
  }
  return env;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string_view entry(*p);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::vector<std::string> to_envp(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

}  // namespace ddp::agent
