// steps::resolve_cluster: --launcher, --hosts/--hostfile, the ssh options, and what a Slurm or
// PBS allocation says about this node. Precedence: explicit flags (command line or PET_*)
// always win over the batch system's environment:
//  - --nnodes, --node-rank, --rdzv-endpoint, --master-addr or --standalone given: the
//    topology (node count, rank, endpoint) is the user's, the environment's is not used;
//  - --rdzv-id given (or --standalone): the run id is the user's, else the job id;
//  - --gpu-ids or --nproc-per-node given: the GPUs are the user's, else the scheduler's
//    (SLURM_STEP_GPUS / SLURM_JOB_GPUS) as --gpu-ids would select them.
// Multi-node execution is not built yet: a launch that needs more than this node (several
// hosts, a remote host, an allocation of several nodes) is refused with a message saying so.
#include "launcher/agent_args.h"
#include "launcher/cluster/host_match.h"
#include "launcher/cluster/pbs_nodefile.h"
#include "launcher/cluster/slurm_environment.h"
#include "launcher/gpu_selection.h"
#include "launcher/option_steps.h"
#include "launcher/option_values.h"

namespace ddp::launcher::steps {
namespace {

using Kind = LaunchPlan::Kind;

constexpr const char* kSshOptions[] = {"ssh_command", "ssh_port", "ssh_identity", "ssh_user",
                                       "forward_env"};

// `what` says why more than this node is needed; `instead` what works today.
std::string not_yet(const std::string& what, const std::string& instead) {
  return what + ", but multi-node launch is not available yet in this ddprun; " + instead;
}

constexpr const char* kSshInstead =
    "for now run on this machine only (--hosts localhost:N, or no --hosts)";
constexpr const char* kAllocationInstead =
    "for now use a one-node allocation, or --launcher local to run on this node only";

Status read_ssh_settings(const RawOptions& raw, LaunchPlan& plan) {
  const RawValue& command = raw.at("ssh_command");
  if (Status s = take(command, cluster::parse_ssh_command(command.text), plan.ssh.command); !s) {
    return s;
  }
  const RawValue& port = raw.at("ssh_port");
  if (port.given || !port.text.empty()) {
    auto number = parse_integer(port.origin, port.text, 1, 65535);
    if (!number) return from(port, number.status());
    plan.ssh.port = static_cast<int>(*number);
  }
  for (auto [key, field] :
       {std::pair{"ssh_identity", &plan.ssh.identity}, std::pair{"ssh_user", &plan.ssh.user}}) {
    const RawValue& value = raw.at(key);
    if (value.given && value.text.empty()) {
      return invalid_argument(value.origin + " is empty; give a value or drop it");
    }
    *field = value.text;
  }
  if (!plan.ssh.user.empty()) {
    if (Status s = cluster::check_host_name(plan.ssh.user, "--ssh-user: "); !s) {
      return invalid_argument("--ssh-user " + plan.ssh.user +
                              " is not a user name (letters, digits, '.', '-', '_')");
    }
  }
  const RawValue& forward = raw.at("forward_env");
  return take(forward, cluster::parse_forward_env(forward.text), plan.forward_env);
}

Result<Kind> choose_kind(const RawOptions& raw, const LaunchEnvironment& environment) {
  const RawValue& launcher = raw.at("launcher");
  bool host_list = raw.at("hosts").given || raw.at("hostfile").given;
  const std::string& word = launcher.text;
  if (word == "auto") {
    if (host_list) return Kind::kSsh;
    if (cluster::in_slurm_job(environment.env)) return Kind::kSlurm;
    if (cluster::in_pbs_job(environment.env)) return Kind::kPbs;
    return Kind::kLocal;
  }
  Kind kind;
  if (word == "local") {
    kind = Kind::kLocal;
  } else if (word == "ssh") {
    kind = Kind::kSsh;
  } else if (word == "slurm") {
    kind = Kind::kSlurm;
  } else if (word == "pbs") {
    kind = Kind::kPbs;
  } else {
    return from(launcher, invalid_argument("--launcher: unknown launcher '" + word +
                                           "'; use auto, local, ssh, slurm or pbs"));
  }
  if (kind == Kind::kSsh && !host_list) {
    return invalid_argument(
        "--launcher ssh needs the hosts: add --hosts h1,h2 or --hostfile "
        "FILE");
  }
  if (kind != Kind::kSsh && host_list) {
    return invalid_argument("--hosts/--hostfile start agents over ssh, but --launcher is " + word +
                            "; drop --launcher or make it ssh");
  }
  if (kind == Kind::kSlurm && !cluster::in_slurm_job(environment.env)) {
    return invalid_argument(
        "--launcher slurm: this is not a Slurm job (SLURM_JOB_ID is unset); "
        "run ddprun under sbatch/srun, or drop --launcher slurm");
  }
  if (kind == Kind::kPbs && cluster::env_value(environment.env, "PBS_NODEFILE").empty()) {
    return invalid_argument(
        "--launcher pbs: this is not a PBS job (PBS_NODEFILE is unset); "
        "run ddprun from a qsub job script, or drop --launcher pbs");
  }
  return kind;
}

Status plan_ssh(const RawOptions& raw, const LaunchEnvironment& environment, Invocation& out) {
  const RawValue& hosts = raw.at("hosts");
  const RawValue& hostfile = raw.at("hostfile");
  if (hosts.given && hostfile.given) {
    return invalid_argument("--hosts and --hostfile both name the hosts; give one of them");
  }
  auto& plan = out.launch;
  if (hosts.given) {
    if (Status s = take(hosts, cluster::parse_hosts_option(hosts.text), plan.hosts); !s) return s;
  } else {
    if (hostfile.text.empty()) {
      return invalid_argument(
          "--hostfile is empty; give the path of a file of `HOST slots=N` "
          "lines");
    }
    if (!environment.read_file) return internal_error("parse_command_line has no file reader");
    auto text = environment.read_file(hostfile.text);
    if (!text) {
      return invalid_argument("--hostfile " + hostfile.text + ": " + text.status().message());
    }
    if (Status s = take(hostfile, cluster::parse_hostfile(*text, hostfile.text), plan.hosts); !s) {
      return s;
    }
  }
  const std::string& source = hosts.given ? hosts.origin : hostfile.origin;
  if (plan.hosts.size() > 1) {
    return invalid_argument(
        not_yet(source + " names " + std::to_string(plan.hosts.size()) + " hosts (one agent each)",
                kSshInstead));
  }
  const cluster::HostSlots& only = plan.hosts.front();
  if (!cluster::is_loopback_name(only.host) &&
      !cluster::same_host(only.host, environment.hostname)) {
    return invalid_argument(not_yet(source + " names the remote host " + only.host +
                                        " (this host is " + environment.hostname + ")",
                                    kSshInstead));
  }
  // One host and it is this one: run here; its slots are the worker count unless given.
  if (only.slots && !raw.at("nproc_per_node").given && !raw.at("gpu_ids").given) {
    out.config.nproc_per_node = *only.slots;
  }
  return Status::ok();
}

Status apply_gpus(const RawOptions& raw, const LaunchEnvironment& environment,
                  const cluster::ClusterContext& context, agent::AgentConfig& config) {
  if (context.gpu_ids.empty() || raw.at("gpu_ids").given || raw.at("nproc_per_node").given) {
    return Status::ok();
  }
  std::optional<std::string> cuda_visible;
  if (auto it = environment.env.find("CUDA_VISIBLE_DEVICES"); it != environment.env.end()) {
    cuda_visible = it->second;
  }
  auto spec = cluster::gpu_ids_for_visible(context.gpu_ids, cuda_visible, context.gpu_source);
  if (!spec) return spec.status();
  auto ids = select_gpu_ids(*spec, *environment.gpus, cuda_visible);
  if (!ids) {
    return invalid_argument(context.gpu_source + "=" +
                            cluster::env_value(environment.env, context.gpu_source) + ": " +
                            ids.status().message());
  }
  config.gpu_ids = std::move(ids).value();
  config.nproc_per_node = static_cast<int>(config.gpu_ids.size());
  return Status::ok();
}

Status apply_context(const RawOptions& raw, const LaunchEnvironment& environment,
                     cluster::ClusterContext context, Invocation& out) {
  auto& config = out.config;
  bool topology_given = false;
  for (const char* key : {"nnodes", "node_rank", "rdzv_endpoint", "master_addr", "standalone"}) {
    topology_given = topology_given || raw.at(key).given;
  }
  if (!topology_given && context.nnodes > 1) {
    return invalid_argument(not_yet(
        "this " + context.scheduler + " job has " + std::to_string(context.nnodes) + " nodes (" +
            context.origin + "; this is node " + std::to_string(context.node_rank) + ")",
        kAllocationInstead));
  }
  if (topology_given) {
    out.notices.push_back("explicit node options take precedence over the " + context.scheduler +
                          " job's node list (" + context.origin + ")");
  }
  if (!raw.at("rdzv_id").given && !config.standalone && !context.run_id.empty()) {
    config.run_id = context.run_id;
  }
  if (Status s = apply_gpus(raw, environment, context, config); !s) return s;
  out.launch.context = std::move(context);
  return Status::ok();
}

}  // namespace

Status resolve_cluster(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out) {
  auto kind = choose_kind(raw, environment);
  if (!kind) return kind.status();
  out.launch.kind = *kind;
  if (Status s = read_ssh_settings(raw, out.launch); !s) return s;
  if (*kind != Kind::kSsh) {
    for (const char* key : kSshOptions) {
      const RawValue& value = raw.at(key);
      if (value.given) {
        return invalid_argument(value.origin +
                                " only applies to ssh launches; add --hosts or "
                                "--hostfile, or drop it");
      }
    }
  }
  if (*kind == Kind::kSsh || *kind == Kind::kPbs) out.launch.agent_args = agent_arguments(raw);
  switch (*kind) {
    case Kind::kLocal:
      return Status::ok();
    case Kind::kSsh:
      return plan_ssh(raw, environment, out);
    case Kind::kSlurm: {
      auto context = cluster::slurm_context(environment.env, environment.hostname);
      if (!context) return context.status();
      return apply_context(raw, environment, std::move(context).value(), out);
    }
    case Kind::kPbs: {
      std::string path = cluster::env_value(environment.env, "PBS_NODEFILE");
      if (path.empty()) {
        return invalid_argument(
            "inside a PBS job (PBS_JOBID is set) but PBS_NODEFILE is not; "
            "use --launcher local to ignore the PBS environment");
      }
      if (!environment.read_file) return internal_error("parse_command_line has no file reader");
      auto text = environment.read_file(path);
      if (!text) return invalid_argument("PBS_NODEFILE=" + path + ": " + text.status().message());
      auto context = cluster::pbs_context(environment.env, *text, environment.hostname);
      if (!context) return context.status();
      return apply_context(raw, environment, std::move(context).value(), out);
    }
  }
  return Status::ok();
}

}  // namespace ddp::launcher::steps
