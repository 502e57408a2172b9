// The ssh command that starts one remote agent: OpenSSH in batch mode (never a password or
// host-key prompt), with the user's ssh command, port, identity file and user, running
//   cd <cwd> && exec env 'K=V'... <agent argv...>
// in the remote login shell, every word quoted by shell_quote.h, so program arguments reach
// the remote agent byte for byte and nothing is shell-injected. `exec` makes the agent the
// process sshd waits on. Also which environment variables travel along (--forward-env).
// Pure; any thread. Failures are kInvalidArgument naming the option and the fix.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/cluster_context.h"

namespace ddp::launcher::cluster {

// What the ssh options (--ssh-command, --ssh-port, --ssh-identity, --ssh-user) say.
struct SshSettings {
  std::vector<std::string> command{"ssh"};  // program and leading arguments
  std::optional<int> port;                  // -p
  std::string identity;                     // -i, empty = ssh's default
  std::string user;                         // -l, empty = ssh's default
};

// The default --forward-env: what a training job commonly needs on every node.
inline constexpr std::string_view kDefaultForwardEnv =
    "NCCL_*,GLOO_*,TORCH_*,PYTHONPATH,OMP_NUM_THREADS,DDPRUN_PYTHON,DDPRUN_LOG_LEVEL";

// --ssh-command: words separated by spaces ("ssh -F /etc/cluster_ssh"); quotes are not
// interpreted, so a word with a quote, or an empty command, is an error.
Result<std::vector<std::string>> parse_ssh_command(std::string_view text);

// --forward-env: comma-separated variable names, each optionally ending in '*' (a prefix):
// "NCCL_*,PYTHONPATH". Empty means forward nothing. Names are [A-Za-z_][A-Za-z0-9_]*.
Result<std::vector<std::string>> parse_forward_env(std::string_view text);

// The variables of `env` that the patterns select, sorted by name.
std::vector<std::pair<std::string, std::string>> forwarded_environment(
    const std::vector<std::string>& patterns, const Environment& env);

// The command line for the remote shell. `cwd` must be absolute; argv[0] must not contain
// '=' (env would take it for a variable).
Result<std::string> remote_command_line(const std::string& cwd,
                                        const std::vector<std::pair<std::string, std::string>>& env,
                                        const std::vector<std::string>& argv);

// ssh's argv: command..., -o BatchMode=yes, [-p PORT], [-i IDENTITY], [-l USER], --, host,
// remote_command. `host` must pass host_spec.h's check_host_name.
Result<std::vector<std::string>> ssh_argv(const SshSettings& settings, std::string_view host,
                                          const std::string& remote_command);

}  // namespace ddp::launcher::cluster
