#include "launcher/cluster/pbs_launch.h"

#include <algorithm>
#include <cctype>

namespace ddp::launcher::cluster {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Result<PbsFlavor> detect_pbs_flavor(const PbsFacts& facts) {
  std::string forced = lower(env_value(facts.env, "DDPRUN_PBS_FLAVOR"));
  if (!forced.empty()) {
    if (forced == "torque") return PbsFlavor::kTorque;
    if (forced == "pbspro" || forced == "openpbs") return PbsFlavor::kPbsPro;
    return invalid_argument("DDPRUN_PBS_FLAVOR=" + env_value(facts.env, "DDPRUN_PBS_FLAVOR") +
                            " is not a PBS flavor; use torque, pbspro or openpbs");
  }
  std::string output = lower(facts.pbsdsh_version_output);
  if (output.find("pbs_version") != std::string::npos) return PbsFlavor::kPbsPro;
  if (output.find("torque") != std::string::npos || output.rfind("version:", 0) == 0 ||
      output.find("\nversion:") != std::string::npos) {
    return PbsFlavor::kTorque;
  }
  if (lower(env_value(facts.env, "PBS_VERSION")).find("torque") != std::string::npos) {
    return PbsFlavor::kTorque;
  }
  return invalid_argument(
      "cannot tell whether this PBS is Torque or PBS Pro (pbsdsh --version said '" +
      facts.pbsdsh_version_output.substr(0, 80) +
      "'); set DDPRUN_PBS_FLAVOR=torque or DDPRUN_PBS_FLAVOR=pbspro");
}

std::vector<std::vector<std::string>> pbsdsh_commands(PbsFlavor flavor,
                                                      const std::vector<PbsNode>& nodes,
                                                      const std::string& pbsdsh,
                                                      const std::vector<std::string>& agent_argv) {
  std::vector<std::vector<std::string>> commands;
  auto with_agent = [&](std::vector<std::string> head) {
    head.push_back("--");
    head.insert(head.end(), agent_argv.begin(), agent_argv.end());
    return head;
  };
  if (flavor == PbsFlavor::kTorque) {
    commands.push_back(with_agent({pbsdsh, "-u"}));
    return commands;
  }
  for (const PbsNode& node : nodes) {
    commands.push_back(with_agent({pbsdsh, "-n", std::to_string(node.first_line)}));
  }
  return commands;
}

}  // namespace ddp::launcher::cluster
