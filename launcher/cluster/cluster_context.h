// ClusterContext: what a batch system's environment says about this node's part of a job,
// before any command-line flag is applied (launcher/cluster_options.cc applies it; explicit
// flags win). Plain data, produced by slurm_environment.h and pbs_nodefile.h.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ddp::launcher::cluster {

// The process environment as name -> value (empty values count as unset everywhere here).
using Environment = std::map<std::string, std::string>;

struct ClusterContext {
  std::string scheduler;           // "slurm" or "pbs": prefixes messages
  std::vector<std::string> hosts;  // the job's nodes in node-rank order (unique)
  int nnodes = 1;                  // hosts.size()
  int node_rank = 0;               // this node's position in hosts
  std::string endpoint_host;       // hosts.front(): where rendezvous lives
  std::string run_id;              // the scheduler's job id; empty when unknown
  std::vector<int> gpu_ids;        // GPUs the scheduler gave this node (global ids); may be empty
  std::string gpu_source;          // the variable gpu_ids came from, e.g. "SLURM_STEP_GPUS"
  std::string origin;              // one line: which variables/files this came from
};

// The value of `name`, or "" when unset or empty.
inline std::string env_value(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace ddp::launcher::cluster
