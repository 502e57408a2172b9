#include "launcher/cluster/slurm_environment.h"

#include <algorithm>
#include <set>

#include "common/text.h"
#include "launcher/cluster/host_list.h"
#include "launcher/cluster/host_match.h"

namespace ddp::launcher::cluster {
namespace {

// At most 12 decimal digits (no sign) making a number up to `max`.
std::optional<long long> parse_uint(std::string_view text, long long max) {
  const auto n = text.size() <= 12 ? parse_number<unsigned long long>(text) : std::nullopt;
  if (!n || *n > static_cast<unsigned long long>(max)) return std::nullopt;
  return static_cast<long long>(*n);
}

std::string join(const std::vector<std::string>& items, std::size_t limit = 8) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  if (items.size() > limit) out += ",...";
  return out;
}

Status check_count(const Environment& env, const std::string& list_var, std::size_t hosts,
                   const std::vector<std::string>& count_vars) {
  for (const std::string& name : count_vars) {
    std::string text = env_value(env, name);
    if (text.empty()) continue;
    const auto count = parse_uint(text, 1 << 30);
    if (!count || *count < 1) {
      return invalid_argument(name + "=" + text + " is not a positive node count; fix or unset it");
    }
    if (static_cast<std::size_t>(*count) != hosts) {
      return invalid_argument(name + "=" + text + " but " + list_var + " names " +
                              std::to_string(hosts) +
                              " hosts; the Slurm environment is "
                              "inconsistent (was it copied from another job?)");
    }
    return Status::ok();
  }
  return Status::ok();
}

Result<int> node_rank(const Environment& env, const std::vector<std::string>& hosts,
                      const std::string& list_var, std::string_view hostname) {
  std::string id = env_value(env, "SLURM_NODEID");
  if (!id.empty()) {
    const auto rank = parse_uint(id, 1 << 30);
    if (!rank || *rank >= static_cast<long long>(hosts.size())) {
      return invalid_argument("SLURM_NODEID=" + id + " is not a node index below the " +
                              std::to_string(hosts.size()) + " hosts of " + list_var);
    }
    return static_cast<int>(*rank);
  }
  std::string name = env_value(env, "SLURMD_NODENAME");
  std::string what =
      name.empty() ? "this host's name '" + std::string(hostname) + "'" : "SLURMD_NODENAME=" + name;
  if (name.empty()) name = std::string(hostname);
  auto found = positions_of(hosts, name);
  if (found.size() != 1) {
    return invalid_argument(std::string("SLURM_NODEID is unset and ") + what +
                            (found.empty() ? " is not in " : " matches several hosts of ") +
                            list_var + "=" + join(hosts) +
                            "; start ddprun with srun, or give --node-rank");
  }
  return static_cast<int>(found.front());
}

}  // namespace

bool in_slurm_job(const Environment& env) {
  return !env_value(env, "SLURM_JOB_ID").empty() || !env_value(env, "SLURM_JOBID").empty();
}

Result<std::vector<int>> parse_gpu_id_list(std::string_view what, std::string_view text) {
  std::vector<int> ids;
  std::set<int> seen;
  auto bad = [&](const std::string& problem) -> Status {
    return invalid_argument(std::string(what) + "=" + std::string(text) + ": " + problem +
                            "; expected comma-separated GPU ids such as 0,1,3");
  };
  for (std::string_view item : split(text, ',')) {
    const auto dash = item.find('-');
    const auto lo = parse_uint(item.substr(0, dash), 1 << 20);
    const auto hi = dash == item.npos ? lo : parse_uint(item.substr(dash + 1), 1 << 20);
    if (!lo || !hi || *hi < *lo || *hi - *lo > 4096) {
      return bad("'" + std::string(item) + "' is not a GPU id or range");
    }
    for (long long id = *lo; id <= *hi; ++id) {
      if (!seen.insert(static_cast<int>(id)).second) {
        return bad("GPU " + std::to_string(id) + " appears twice");
      }
      ids.push_back(static_cast<int>(id));
    }
  }
  return ids;
}

Result<ClusterContext> slurm_context(const Environment& env, std::string_view hostname) {
  ClusterContext context;
  context.scheduler = "slurm";
  context.run_id = env_value(env, "SLURM_JOB_ID");
  if (context.run_id.empty()) context.run_id = env_value(env, "SLURM_JOBID");

  std::string list_var;
  std::vector<std::string> count_vars;
  if (!env_value(env, "SLURM_STEP_NODELIST").empty()) {
    list_var = "SLURM_STEP_NODELIST";
    count_vars = {"SLURM_STEP_NUM_NODES"};
  } else if (!env_value(env, "SLURM_JOB_NODELIST").empty()) {
    list_var = "SLURM_JOB_NODELIST";
    count_vars = {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"};
  } else if (!env_value(env, "SLURM_NODELIST").empty()) {
    list_var = "SLURM_NODELIST";
    count_vars = {"SLURM_NNODES"};
  } else {
    return invalid_argument(
        "inside a Slurm job (SLURM_JOB_ID=" + context.run_id +
        ") but none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST is set; "
        "start ddprun with srun, or use --launcher local to ignore the Slurm environment");
  }
  auto hosts = expand_host_list(env_value(env, list_var), list_var);
  if (!hosts) return hosts.status();
  std::set<std::string> unique(hosts->begin(), hosts->end());
  if (unique.size() != hosts->size()) {
    return invalid_argument(list_var + "=" + env_value(env, list_var) +
                            " names a host twice; every node must appear once");
  }
  if (Status s = check_count(env, list_var, hosts->size(), count_vars); !s) return s;
  auto rank = node_rank(env, *hosts, list_var, hostname);
  if (!rank) return rank.status();

  context.hosts = std::move(hosts).value();
  context.nnodes = static_cast<int>(context.hosts.size());
  context.node_rank = *rank;
  context.endpoint_host = context.hosts.front();
  context.origin = list_var + "=" + env_value(env, list_var);

  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    std::string text = env_value(env, name);
    if (text.empty()) continue;
    auto ids = parse_gpu_id_list(name, text);
    if (!ids) return ids.status();
    context.gpu_ids = std::move(ids).value();
    context.gpu_source = name;
    break;
  }
  return context;
}

Result<std::string> gpu_ids_for_visible(const std::vector<int>& ids,
                                        const std::optional<std::string>& cuda_visible_devices,
                                        std::string_view source) {
  std::vector<std::string> selection;
  if (!cuda_visible_devices) {
    for (int id : ids) selection.push_back(std::to_string(id));
  } else {
    std::vector<std::string_view> visible;
    if (!cuda_visible_devices->empty()) visible = split(*cuda_visible_devices, ',');
    bool all_listed = true;
    for (int id : ids) {
      auto it = std::find(visible.begin(), visible.end(), std::to_string(id));
      if (it == visible.end()) {
        all_listed = false;
        break;
      }
      selection.push_back(std::to_string(it - visible.begin()));
    }
    if (!all_listed) {
      if (visible.size() != ids.size()) {
        std::vector<std::string> id_text;
        for (int id : ids) id_text.push_back(std::to_string(id));
        return invalid_argument(std::string(source) + "=" + join(id_text, 64) +
                                " does not match CUDA_VISIBLE_DEVICES=" + *cuda_visible_devices +
                                "; choose the GPUs with --gpu-ids (indices into "
                                "CUDA_VISIBLE_DEVICES)");
      }
      selection.clear();
      for (std::size_t i = 0; i < ids.size(); ++i) selection.push_back(std::to_string(i));
    }
  }
  return join(selection, selection.size());
}

}  // namespace ddp::launcher::cluster
