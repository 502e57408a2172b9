#include "agent/run_setup.h"

#include <stdlib.h>
#include <unistd.h>

#include "agent/workers/worker_args.h"
#include "common/host_identity.h"
#include "common/signal_name.h"

namespace ddp::agent {

std::filesystem::path RunSetup::attempt_dir(int attempt) const {
  return log_dir / ("attempt_" + std::to_string(attempt));
}

std::filesystem::path RunSetup::error_file(int attempt, int local_rank) const {
  return attempt_dir(attempt) / std::to_string(local_rank) / "error.json";
}

proc::LaunchSpec RunSetup::launch_spec(int attempt, int local_rank) const {
  GroupContext g = group;
  g.restart_count = attempt;
  proc::LaunchSpec spec;
  spec.argv = substitute_local_rank(worker_argv, local_rank);
  spec.env = to_envp(make_worker_env(base_env, g, local_rank, error_file(attempt, local_rank)));
  if (local_rank < static_cast<int>(cpu_affinity.size()))
    spec.cpu_affinity = cpu_affinity[local_rank];
  if (local_rank < static_cast<int>(memory_nodes.size()))
    spec.memory_nodes = memory_nodes[local_rank];
  return spec;
}

namespace {

Result<std::filesystem::path> make_log_dir(const AgentConfig& config) {
  std::error_code ec;
  if (config.log_dir) {
    std::filesystem::create_directories(*config.log_dir, ec);
    if (ec) {
      return io_error("cannot create --log-dir " + config.log_dir->string() + ": " + ec.message() +
                      "; pass a writable directory");
    }
    return std::filesystem::absolute(*config.log_dir);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/torchelastic_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return io_error("cannot create a log directory from " + pattern +
                    "; set TMPDIR to a writable directory or pass --log-dir");
  }
  return std::filesystem::path(pattern);
}

}  // namespace

Result<RunSetup> prepare_run(const AgentConfig& config) {
  if (config.worker_argv.empty()) return invalid_argument("no worker program to run");
  if (config.nproc_per_node < 1) {
    return invalid_argument("--nproc-per-node must be at least 1");
  }
  RunSetup setup;
  setup.base_env = current_environment();
  setup.worker_argv = config.worker_argv;
  setup.cpu_affinity = config.cpu_affinity;
  setup.memory_nodes = config.memory_nodes;
  setup.hostname = host_name();

  GroupContext& g = setup.group;
  g.role = config.role;
  g.local_world_size = config.nproc_per_node;
  g.group_rank = 0;
  g.group_world_size = 1;
  g.global_rank_base = 0;
  g.world_size = config.nproc_per_node;
  g.max_restarts = config.job.max_restarts;
  g.use_agent_store = true;
  g.gpu_ids = config.gpu_ids;
  g.virtual_local_rank = config.virtual_local_rank;
  for (int sig : config.signals_to_handle) {
    if (!g.signals_to_handle.empty()) g.signals_to_handle += ',';
    g.signals_to_handle += signal_name(sig);
  }
  const bool static_backend = config.rdzv_backend == "static" && !config.standalone;
  g.master_addr = static_backend ? config.master_addr
                                 : (config.local_addr.empty() ? "127.0.0.1" : config.local_addr);
  // The launcher gives --standalone a random id; any job without one gets one too.
  g.run_id = config.run_id.empty() || (config.standalone && config.run_id == "none")
                 ? random_run_id()
                 : config.run_id;

  auto dir = make_log_dir(config);
  if (!dir) return dir.status();
  setup.log_dir = *dir;
  return setup;
}

}  // namespace ddp::agent
