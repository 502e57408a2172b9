#include "launcher/fanout/node_launches.h"

#include "agent/membership/etcd_settings.h"
#include "agent/membership/rdzv_settings.h"
#include "launcher/cluster/shell_quote.h"
#include "launcher/cluster/ssh_command.h"

namespace ddp::launcher::fanout {
namespace {

// --rdzv-conf as the user gave it, with the fan-out's own secret file (PBS); c10d: with
// is_host=false (the daemon is this ddprun's).
std::string rdzv_conf(const agent::AgentConfig& config, const FanoutSite& site, bool etcd) {
  namespace k = agent::rdzv_key;
  std::string out;
  if (!site.secret_file.empty()) out += std::string(k::kSecretFile) + "=" + site.secret_file;
  for (const auto& [key, value] : config.rdzv_conf) {
    if (key == k::kIsHost || key == k::kSecretFile) continue;  // the fan-out brings its own secret
    out += (out.empty() ? "" : ",") + key + "=" + value;
  }
  if (etcd) return out;
  return out + (out.empty() ? "" : ",") + k::kIsHost + "=false";
}

std::vector<std::string> agent_argv(const launcher::Invocation& invocation, const FanoutSite& site,
                                    const std::string& local_addr, int slots,
                                    bool exit_on_stdin_eof) {
  std::vector<std::string> argv{site.ddprun};
  auto options = agent_options(invocation, site, local_addr, slots, exit_on_stdin_eof);
  argv.insert(argv.end(), options.begin(), options.end());
  const auto& rest = invocation.launch.agent_args;
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

}  // namespace

std::vector<std::string> agent_options(const launcher::Invocation& invocation,
                                       const FanoutSite& site, const std::string& local_addr,
                                       int slots, bool exit_on_stdin_eof) {
  const agent::AgentConfig& config = invocation.config;
  const bool etcd = agent::is_etcd_backend(config.rdzv_backend);
  std::vector<std::string> out = {
      "--launcher=local",
      "--nnodes=" + std::to_string(config.job.min_nodes) + ":" +
          std::to_string(config.job.max_nodes),
      "--rdzv-backend=" + std::string(etcd ? config.rdzv_backend : "c10d"),
      "--rdzv-endpoint=" + site.endpoint,
      "--rdzv-id=" + config.run_id,
      "--rdzv-conf=" + rdzv_conf(config, site, etcd)};
  if (slots > 0) {
    out.push_back("--nproc-per-node=" + std::to_string(slots));
  } else if (!invocation.launch.nproc_per_node.empty()) {
    out.push_back("--nproc-per-node=" + invocation.launch.nproc_per_node);
  }
  if (!local_addr.empty()) out.push_back("--local-addr=" + local_addr);
  if (exit_on_stdin_eof) out.push_back("--exit-on-stdin-eof");
  // ssh agents of a c10d job read its fresh secret from their stdin (fanout.cc writes it
  // first). etcd jobs have no daemon of this ddprun to prove anything to.
  if (exit_on_stdin_eof && !etcd) out.push_back("--secret-from-stdin");
  out.push_back("--job-report-by-launcher");
  return out;
}

Result<std::vector<NodeLaunch>> ssh_launches(const launcher::Invocation& invocation,
                                             const FanoutSite& site) {
  const auto& plan = invocation.launch;
  auto env = cluster::forwarded_environment(plan.forward_env, site.env);
  std::vector<NodeLaunch> launches;
  for (const cluster::HostSlots& host : plan.hosts) {
    auto argv = agent_argv(invocation, site, host.host, host.slots.value_or(0), true);
    auto remote = cluster::remote_command_line(site.cwd, env, argv);
    if (!remote) return remote.status();
    auto ssh = cluster::ssh_argv(plan.ssh, host.host, *remote);
    if (!ssh) return ssh.status();
    launches.push_back({host.host, std::move(ssh).value(), true});
  }
  return launches;
}

Result<std::vector<std::string>> ssh_probe(const launcher::Invocation& invocation,
                                           const std::string& host, int connect_timeout_s) {
  cluster::SshSettings settings = invocation.launch.ssh;
  // ssh takes the first value of an option: this one wins over the user's config files.
  settings.command.insert(settings.command.end(),
                          {"-o", "ConnectTimeout=" + std::to_string(connect_timeout_s)});
  return cluster::ssh_argv(settings, host, "true");
}

Result<std::vector<NodeLaunch>> pbs_launches(const launcher::Invocation& invocation,
                                             const FanoutSite& site, cluster::PbsFlavor flavor,
                                             const std::string& pbsdsh) {
  const auto& plan = invocation.launch;
  auto patterns = cluster::parse_forward_env(cluster::kDefaultForwardEnv);
  if (!patterns) return patterns.status();
  auto env = cluster::forwarded_environment(*patterns, site.env);
  std::vector<NodeLaunch> launches;
  auto shell = [&](const std::string& local_addr) -> Result<std::vector<std::string>> {
    auto remote = cluster::remote_command_line(site.cwd, env,
                                               agent_argv(invocation, site, local_addr, 0, false));
    if (!remote) return remote.status();
    return std::vector<std::string>{"/bin/sh", "-c", *remote};
  };
  if (flavor == cluster::PbsFlavor::kTorque) {
    // One `pbsdsh -u` for every node: each agent advertises its own hostname.
    auto command = shell("");
    if (!command) return command.status();
    auto lines = cluster::pbsdsh_commands(flavor, plan.pbs_nodes, pbsdsh, *command);
    launches.push_back({"pbsdsh", std::move(lines.front()), false});
    return launches;
  }
  for (const cluster::PbsNode& node : plan.pbs_nodes) {
    auto command = shell(node.host);
    if (!command) return command.status();
    auto lines = cluster::pbsdsh_commands(flavor, {node}, pbsdsh, *command);
    launches.push_back({node.host, std::move(lines.front()), false});
  }
  return launches;
}

}  // namespace ddp::launcher::fanout
