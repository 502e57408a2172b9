#include "agent/workers/worker_args.h"

#include <filesystem>

#include "agent/workers/safe_substitute.h"

namespace ddp::agent {

bool runs_python(const std::vector<std::string>& argv) {
  return !argv.empty() &&
         std::filesystem::path(argv[0]).filename().string().find("python") != std::string::npos;
}

std::string substitute_local_rank(const std::string& arg, int local_rank) {
  return safe_substitute(arg, {{"local_rank", std::to_string(local_rank)}});
}

std::vector<std::string> substitute_local_rank(const std::vector<std::string>& argv,
                                               int local_rank) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const std::string& arg : argv) out.push_back(substitute_local_rank(arg, local_rank));
  return out;
}

}  // namespace ddp::agent
