// steps::resolve_cluster: --launcher, --hosts/--hostfile, the ssh options, and what a Slurm or
// PBS allocation says about this node. Precedence: explicit flags (command line or PET_*)
// always win over the batch system's environment:
//  - --nnodes, --node-rank, --rdzv-endpoint, --master-addr or --standalone given: the
//    topology (node count, rank, endpoint) is the user's, the environment's is not used;
//  - --rdzv-id given (or --standalone): the run id is the user's, else the job id;
//  - --gpu-ids or --nproc-per-node given: the GPUs are the user's, else the scheduler's
//    (SLURM_STEP_GPUS / SLURM_JOB_GPUS) as --gpu-ids would select them.
// Inside an allocation of several nodes (one agent per node, started by srun or pbsdsh -u),
// the allocation's topology feeds the c10d multi-node agent (apply_allocation_topology); with
// --rdzv-backend etcd the node count and addresses do, and --rdzv-endpoint stays etcd's.
// A launch from this one process onto other nodes (several hosts or a remote one with
// --hosts/--hostfile; --launcher pbs on a job of several nodes) is a fan-out: plan_fan_out
// fills the LaunchPlan that launcher/fanout/ runs.
#include <string_view>

#include "agent/membership/etcd_settings.h"
#include "common/host_port.h"
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

Status read_ssh_settings(const RawOptions& raw, LaunchPlan& plan) {
  const RawValue& command = raw.at("ssh_command");
  if (Status s = take(command, cluster::parse_ssh_command(command.text), plan.ssh.command); !s) {
    return s;
  }
  const RawValue& port = raw.at("ssh_port");
  if (port.given || !port.text.empty()) {
    if (Status s = take_integer(port, 1, 65535, plan.ssh.port); !s) return s;
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

// This ddprun starts the agent of every node (launcher/fanout/): the c10d rendezvous, hosted
// here, over `nodes` nodes (`what` names them in messages); the options a fan-out sets per
// node leave agent_args, static-rendezvous and single-node options are refused.
Status plan_fan_out(const RawOptions& raw, const LaunchEnvironment& environment,
                    const std::string& what, Invocation& out) {
  auto& config = out.config;
  auto& plan = out.launch;
  const int nodes = plan.kind == Kind::kPbs ? static_cast<int>(plan.pbs_nodes.size())
                                            : static_cast<int>(plan.hosts.size());
  for (const char* key : {"standalone", "node_rank", "master_addr"}) {
    const RawValue& value = raw.at(key);
    if (value.given) {
      return invalid_argument(value.origin + " does not apply when ddprun starts the agents of " +
                              what + " (c10d rendezvous hosted by this ddprun); drop it");
    }
  }
  // etcd: the agents meet in the user's etcd (--rdzv-endpoint), nothing is hosted here.
  const bool etcd = raw.at("rdzv_backend").given && agent::is_etcd_backend(config.rdzv_backend);
  if (raw.at("rdzv_backend").given && config.rdzv_backend != "c10d" && !etcd) {
    return invalid_argument("--rdzv-backend " + config.rdzv_backend + ": the agents of " + what +
                            " use the c10d rendezvous this ddprun hosts (or etcd); drop "
                            "--rdzv-backend");
  }
  if (raw.at("nnodes").given && static_cast<int>(config.job.max_nodes) != nodes) {
    return invalid_argument("--nnodes " + raw.at("nnodes").text + " does not match the " +
                            std::to_string(nodes) + " nodes of " + what +
                            "; drop --nnodes or make its maximum " + std::to_string(nodes));
  }
  if (!raw.at("nnodes").given) config.job.min_nodes = config.job.max_nodes = nodes;
  if (!etcd) config.rdzv_backend = "c10d";
  if (!raw.at("rdzv_id").given) config.run_id = environment.standalone_run_id;
  if (environment.cwd.empty() || environment.cwd.front() != '/') {
    return invalid_argument("cannot tell the working directory the remote agents start in ('" +
                            environment.cwd + "'); run ddprun from an existing directory");
  }
  if (raw.at("nproc_per_node").given) plan.nproc_per_node = raw.at("nproc_per_node").text;
  plan.agent_args = agent_arguments(raw, /*fan_out=*/true);
  plan.fan_out = true;
  return Status::ok();
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
  const cluster::HostSlots& first = plan.hosts.front();
  bool here_only = plan.hosts.size() == 1 && (cluster::is_loopback_name(first.host) ||
                                              cluster::same_host(first.host, environment.hostname));
  if (!here_only) {
    for (const cluster::HostSlots& host : plan.hosts) {
      if (plan.hosts.size() > 1 && cluster::is_loopback_name(host.host)) {
        return invalid_argument(source + ": " + host.host +
                                " is a loopback name the other hosts cannot reach; name this "
                                "machine by its hostname or address");
      }
    }
    return plan_fan_out(raw, environment,
                        "the " + std::to_string(plan.hosts.size()) + " host(s) of " + source, out);
  }
  // One host and it is this one: run here; its slots are the worker count unless given.
  if (first.slots && !raw.at("nproc_per_node").given && !raw.at("gpu_ids").given) {
    out.config.nproc_per_node = *first.slots;
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

// Inside an allocation of several nodes, no topology flag given: every node's agent joins the
// c10d rendezvous on the first host, at kAllocationRdzvPort unless $DDPRUN_RDZV_PORT says;
// the agent of node rank 0 hosts the daemon (is_host, unless --rdzv-conf sets it); each node
// advertises its own name from the node list unless --local-addr is given. An explicit
// --rdzv-backend static keeps the backend and gets the static topology (master = first host).
constexpr int kAllocationRdzvPort = 29400;  // torchrun's c10d default

Status apply_allocation_topology(const RawOptions& raw, const LaunchEnvironment& environment,
                                 const cluster::ClusterContext& context,
                                 agent::AgentConfig& config) {
  config.job.min_nodes = config.job.max_nodes = context.nnodes;
  config.node_rank = context.node_rank;
  if (raw.at("rdzv_backend").given && config.rdzv_backend == "static") {
    config.master_addr = context.endpoint_host;
    return Status::ok();
  }
  if (agent::is_etcd_backend(config.rdzv_backend)) {  // the user's etcd; nothing hosted here
    if (!raw.at("local_addr").given) {
      config.local_addr = context.hosts.at(static_cast<std::size_t>(context.node_rank));
    }
    return Status::ok();
  }
  long long port = kAllocationRdzvPort;
  if (std::string text = cluster::env_value(environment.env, "DDPRUN_RDZV_PORT"); !text.empty()) {
    auto parsed = parse_integer("DDPRUN_RDZV_PORT", text, 1, 65535);
    if (!parsed)
      return invalid_argument(parsed.status().message() +
                              " (the allocation's "
                              "rendezvous port; unset it for 29400)");
    port = *parsed;
  }
  config.rdzv_backend = "c10d";
  config.rdzv_endpoint = join_host_port(context.endpoint_host, static_cast<std::uint16_t>(port));
  config.rdzv_conf.emplace(agent::rdzv_key::kIsHost, context.node_rank == 0 ? "1" : "0");
  if (!raw.at("local_addr").given) {
    config.local_addr = context.hosts.at(static_cast<std::size_t>(context.node_rank));
  }
  return Status::ok();
}

// --launcher pbs on a job of several nodes: this ddprun starts one agent per unique node of
// $PBS_NODEFILE through pbsdsh (launcher/cluster/pbs_launch.h).
Status plan_pbs_fan_out(const RawOptions& raw, const LaunchEnvironment& environment,
                        Invocation& out) {
  std::string path = cluster::env_value(environment.env, "PBS_NODEFILE");
  auto text = environment.read_file(path);
  if (!text) return invalid_argument("PBS_NODEFILE=" + path + ": " + text.status().message());
  auto nodes = cluster::parse_pbs_nodefile(*text, path);
  if (!nodes) return nodes.status();
  out.launch.pbs_nodes = std::move(nodes).value();
  if (Status s = plan_fan_out(raw, environment,
                              "the " + std::to_string(out.launch.pbs_nodes.size()) +
                                  " nodes of PBS_NODEFILE=" + path + " (--launcher pbs)",
                              out);
      !s) {
    return s;
  }
  std::string job = cluster::env_value(environment.env, "PBS_JOBID");
  if (!raw.at("rdzv_id").given && !job.empty()) out.config.run_id = job;
  return Status::ok();
}

Status apply_context(const RawOptions& raw, const LaunchEnvironment& environment,
                     cluster::ClusterContext context, Invocation& out) {
  auto& config = out.config;
  bool topology_given = false;
  // An etcd job's --rdzv-endpoint names etcd, not a node of the allocation.
  const bool etcd = agent::is_etcd_backend(config.rdzv_backend);
  for (const char* key : {"nnodes", "node_rank", "rdzv_endpoint", "master_addr", "standalone"}) {
    if (etcd && std::string_view(key) == "rdzv_endpoint") continue;
    topology_given = topology_given || raw.at(key).given;
  }
  if (!topology_given && context.nnodes > 1) {
    if (raw.at("launcher").text == "pbs") return plan_pbs_fan_out(raw, environment, out);
    if (Status s = apply_allocation_topology(raw, environment, context, config); !s) return s;
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
