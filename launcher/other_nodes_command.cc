// steps::note_other_nodes_command: node rank 0 of a static job of several nodes says the
// command the other nodes need, so that whoever starts them need not reconstruct it.
#include <algorithm>
#include <iterator>

#include "launcher/agent_args.h"
#include "launcher/cluster/shell_quote.h"
#include "launcher/option_steps.h"

namespace ddp::launcher::steps {
namespace {

bool starts_with(const std::string& word, std::string_view prefix) {
  return word.rfind(prefix, 0) == 0;
}

// "--name=value" with only the value quoted (shell_quote would quote the whole word for '=').
std::string quoted(const std::string& word) {
  auto eq = word.find('=');
  if (!starts_with(word, "--") || eq == std::string::npos) return cluster::shell_quote(word);
  return word.substr(0, eq + 1) + cluster::shell_quote(word.substr(eq + 1));
}

}  // namespace

void note_other_nodes_command(const RawOptions& raw, Invocation& out) {
  const agent::AgentConfig& c = out.config;
  if (c.job.max_nodes < 2 || c.standalone || out.launch.fan_out || c.rdzv_backend != "static" ||
      c.node_rank != 0) {
    return;
  }
  // Where rank 0 listens, spelled out when it was a default, then this node's explicit
  // options less its own rank and address, then PROGRAM and its arguments.
  std::vector<std::string> args;
  if (!raw.at("rdzv_endpoint").given) {
    if (!raw.at("master_addr").given) args.push_back("--master-addr=" + c.master_addr);
    if (!raw.at("master_port").given) {
      args.push_back("--master-port=" + std::to_string(c.master_port));
    }
  }
  args.emplace_back("--node-rank=RANK");
  std::vector<std::string> given = agent_arguments(raw);
  const auto program = given.end() - static_cast<std::ptrdiff_t>(raw.program.size());
  std::copy_if(given.begin(), program, std::back_inserter(args), [](const std::string& word) {
    return !starts_with(word, "--node-rank=") && !starts_with(word, "--local-addr=");
  });
  args.insert(args.end(), program, given.end());
  std::string command = "ddprun";
  for (const std::string& word : args) {
    command += ' ';
    command += quoted(word);
  }
  out.info.push_back("the other nodes join with: " + command + "   (RANK = 1 to " +
                     std::to_string(c.job.max_nodes - 1) + ", once each)");
}

}  // namespace ddp::launcher::steps
