#include "launcher/cluster/pbs_nodefile.h"

#include <cctype>

#include "common/text.h"
#include "launcher/cluster/host_match.h"

namespace ddp::launcher::cluster {
namespace {

bool hostname_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
         c == ':' || c == '[' || c == ']';
}

}  // namespace

bool in_pbs_job(const Environment& env) {
  return !env_value(env, "PBS_JOBID").empty() || !env_value(env, "PBS_NODEFILE").empty();
}

Result<std::vector<PbsNode>> parse_pbs_nodefile(std::string_view text, std::string_view path) {
  std::vector<PbsNode> nodes;
  int line_number = 0;
  int host_line = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string_view line = trim(text.substr(start, end - start));
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++line_number;
    if (line.empty()) continue;
    for (char c : line) {
      if (!hostname_char(c)) {
        return invalid_argument(std::string(path) + ":" + std::to_string(line_number) + ": '" +
                                std::string(line) +
                                "' is not a host name (PBS_NODEFILE has one host per line)");
      }
    }
    PbsNode* node = nullptr;
    for (PbsNode& known : nodes) {
      if (known.host == line) node = &known;
    }
    if (node == nullptr) {
      nodes.push_back({std::string(line), 0, host_line});
      node = &nodes.back();
    }
    ++node->slots;
    ++host_line;
  }
  if (nodes.empty()) {
    return invalid_argument(std::string(path) +
                            " (PBS_NODEFILE) lists no hosts; is this really a PBS job?");
  }
  return nodes;
}

Result<ClusterContext> pbs_context(const Environment& env, std::string_view nodefile_text,
                                   std::string_view hostname) {
  std::string path = env_value(env, "PBS_NODEFILE");
  auto nodes = parse_pbs_nodefile(nodefile_text, path);
  if (!nodes) return nodes.status();
  ClusterContext context;
  context.scheduler = "pbs";
  for (const PbsNode& node : *nodes) context.hosts.push_back(node.host);
  auto found = positions_of(context.hosts, hostname);
  if (found.size() != 1) {
    std::string listed;
    for (std::size_t i = 0; i < context.hosts.size() && i < 8; ++i) {
      listed += (i > 0 ? "," : "") + context.hosts[i];
    }
    if (context.hosts.size() > 8) listed += ",...";
    return invalid_argument("this host's name '" + std::string(hostname) +
                            (found.empty() ? "' is not among" : "' matches several of") +
                            " the hosts of PBS_NODEFILE=" + path + " (" + listed +
                            "); run ddprun on a node of the job, or give --node-rank");
  }
  context.nnodes = static_cast<int>(context.hosts.size());
  context.node_rank = static_cast<int>(found.front());
  context.endpoint_host = context.hosts.front();
  context.run_id = env_value(env, "PBS_JOBID");
  context.origin = "PBS_NODEFILE=" + path;
  return context;
}

}  // namespace ddp::launcher::cluster
