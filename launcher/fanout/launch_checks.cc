#include "launcher/fanout/launch_checks.h"

#include "launcher/fanout/command_runs.h"
#include "launcher/fanout/node_launches.h"

namespace ddp::launcher::fanout {
namespace {

using namespace std::chrono_literals;

constexpr int kProbeConnectTimeoutS = 10;
constexpr auto kProbeDeadline = 20s;  // ConnectTimeout plus the login itself

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) {
    trimmed.pop_back();
  }
  auto nl = trimmed.rfind('\n');
  return nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
}

}  // namespace

Status probe_ssh_hosts(const launcher::Invocation& invocation) {
  std::vector<std::vector<std::string>> probes;
  for (const auto& host : invocation.launch.hosts) {
    auto argv = ssh_probe(invocation, host.host, kProbeConnectTimeoutS);
    if (!argv) return argv.status();
    probes.push_back(std::move(argv).value());
  }
  auto runs = run_commands(probes, kProbeDeadline);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const CommandRun& run = runs[i];
    if (run.exit && run.exit->ok()) continue;
    const std::string& host = invocation.launch.hosts[i].host;
    std::string why = run.timed_out
                          ? "no answer within " + std::to_string(kProbeDeadline.count()) + " s"
                      : !run.exit                     ? last_line(run.output)
                      : last_line(run.output).empty() ? "ssh " + run.exit->describe()
                                                      : last_line(run.output);
    return invalid_argument("cannot reach host " + host + " over ssh (" + why +
                            "); check the name, that sshd runs there and that a key logs in "
                            "without a password (BatchMode), or fix --ssh-* / the hostfile");
  }
  return Status::ok();
}

Result<cluster::PbsFlavor> find_pbs_flavor(const cluster::Environment& env) {
  cluster::PbsFacts facts;
  facts.env = env;
  if (cluster::env_value(env, "DDPRUN_PBS_FLAVOR").empty()) {
    auto runs = run_commands({{"pbsdsh", "--version"}}, 10s);
    if (!runs.front().exit) {
      return invalid_argument("--launcher pbs: cannot run pbsdsh (" +
                              last_line(runs.front().output) +
                              "); run ddprun inside a PBS job where pbsdsh is on PATH");
    }
    facts.pbsdsh_version_output = runs.front().output;
  }
  return cluster::detect_pbs_flavor(facts);
}

}  // namespace ddp::launcher::fanout
