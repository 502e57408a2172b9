#include "launcher/agent_args.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace ddp::launcher {
namespace {

// status_port: only the node that hosts the rendezvous serves it.
constexpr std::array<std::string_view, 9> kLauncherOnly = {
    "launcher", "hosts",        "hostfile",    "ssh_command", "ssh_port",
    "ssh_user", "ssh_identity", "forward_env", "status_port"};

constexpr std::array<std::string_view, 10> kFanOutSets = {
    "nnodes",           "nproc_per_node",    "rdzv_backend",
    "rdzv_endpoint",    "rdzv_id",           "rdzv_conf",
    "local_addr",       "exit_on_stdin_eof", "job_report_by_launcher",
    "secret_from_stdin"};

}  // namespace

std::vector<std::string> agent_arguments(const RawOptions& raw, bool fan_out) {
  std::vector<std::string> args;
  for (const auto& [key, value] : raw.values) {
    if (!value.given) continue;
    if (std::find(kLauncherOnly.begin(), kLauncherOnly.end(), key) != kLauncherOnly.end()) {
      continue;
    }
    if (fan_out && std::find(kFanOutSets.begin(), kFanOutSets.end(), key) != kFanOutSets.end()) {
      continue;
    }
    std::string name = "--" + key;
    std::replace(name.begin(), name.end(), '_', '-');
    if (is_flag_option(key)) {
      if (value.text != "0") args.push_back(name);  // PET_* flags are integers, 0 = off
    } else {
      args.push_back(name + "=" + value.text);
    }
  }
  args.insert(args.end(), raw.program.begin(), raw.program.end());
  return args;
}

}  // namespace ddp::launcher
