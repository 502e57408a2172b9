// ddprun: parse the command line, check it against the machine, then hand the job to the
// agent. Bad input is one line on stderr and exit code 2, with nothing started.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>
#include <thread>

#include "agent/agent.h"
#include "agent/membership/etcd_settings.h"
#include "agent/membership/rdzv_settings.h"
#include "agent/run_setup.h"
#include "common/host_identity.h"
#include "common/logging.h"
#include "launcher/fanout/fanout.h"
#include "launcher/gpu_inventory.h"
#include "launcher/numa_placement.h"
#include "launcher/numa_topology.h"
#include "launcher/options.h"
#include "launcher/preflight.h"
#include "launcher/status_command.h"
#include "proc/open_file_limit.h"

extern char** environ;

namespace {

constexpr int kUsageExit = 2;

int usage_error(const ddp::Status& status) {
  std::string message = status.message();
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::cerr << "ddprun: error: " << message << std::endl;
  return kUsageExit;
}

// The file-reading seam of parse_command_line ($PBS_NODEFILE, --hostfile).
ddp::Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ddp::io_error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ddp::io_error("cannot read " + path);
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  // `ddprun status ...` reads a daemon's status port (launcher/status_command.h).
  if (argc >= 2 && std::string_view(argv[1]) == "status") {
    return ddp::launcher::run_status_command(std::vector<std::string>(argv + 2, argv + argc),
                                             std::cout, std::cerr);
  }
  ddp::launcher::LaunchEnvironment environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) environment.env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  auto inventory = ddp::launcher::make_system_gpu_inventory(environment.env);
  environment.gpus = inventory.get();
  environment.cpu_count = std::max(1u, std::thread::hardware_concurrency());
  environment.standalone_run_id = ddp::random_run_id();
  environment.hostname = ddp::host_name();
  std::error_code cwd_error;
  environment.cwd = std::filesystem::current_path(cwd_error).string();
  environment.read_file = read_text_file;

  auto invocation = ddp::launcher::parse_command_line(
      std::vector<std::string>(argv + 1, argv + argc), environment);
  if (!invocation) return usage_error(invocation.status());
  if (invocation->action == ddp::launcher::Invocation::Action::kHelp ||
      invocation->action == ddp::launcher::Invocation::Action::kCompletion) {
    std::cout << invocation->text;
    return 0;
  }
  if (invocation->action == ddp::launcher::Invocation::Action::kVersion) {
    std::cout << "ddprun " << DDPRUN_VERSION << " (commit " << DDPRUN_COMMIT << ")\n";
    return 0;
  }
  auto path = environment.env.find("PATH");
  if (ddp::Status s = ddp::launcher::preflight(*invocation, path == environment.env.end()
                                                                ? "/usr/local/bin:/usr/bin:/bin"
                                                                : path->second);
      !s) {
    return usage_error(s);
  }
  auto level = environment.env.find("DDPRUN_LOG_LEVEL");
  if (ddp::Status s =
          ddp::init_logging("ddprun", level == environment.env.end() ? "info" : level->second);
      !s) {
    return usage_error(ddp::invalid_argument("DDPRUN_LOG_LEVEL: " + s.message()));
  }
  // The agent's rendezvous settings are checked here too, before any notice is logged, so
  // that a bad --rdzv-conf or --master-port stays a one-line error.
  if (ddp::agent::is_etcd_backend(invocation->config.rdzv_backend) &&
      !invocation->config.standalone && !invocation->launch.fan_out) {
    if (auto etcd = ddp::agent::etcd_settings(invocation->config); !etcd) {
      return usage_error(etcd.status());
    }
  } else if (ddp::agent::is_multinode(invocation->config) && !invocation->launch.fan_out) {
    if (auto rdzv = ddp::agent::rdzv_settings(invocation->config); !rdzv) {
      return usage_error(rdzv.status());
    }
  } else if (invocation->config.job.exclude_straggler && !invocation->launch.fan_out) {
    return usage_error(ddp::invalid_argument(
        "--exclude-straggler does not apply to a one-node job (removing its node would end the "
        "job); drop it, or give --nnodes MIN:MAX with --rdzv-backend c10d so that the others "
        "or a spare go on"));
  }
  // The servers a node hosts hold one descriptor per client (a workers' store: one per worker
  // of the job); the workers get the soft limit back (proc/open_file_limit.h).
  spdlog::debug("open-file limit {}", ddp::proc::raise_open_file_limit());
  for (const auto& notice : invocation->notices) spdlog::warn("{}", notice);
  for (const auto& line : invocation->info) spdlog::info("{}", line);
  // --numa-binding: this node's CPUs per local rank (a fan-out's agents find their own).
  if (!invocation->launch.fan_out) {
    auto sysfs = environment.env.find(ddp::launcher::kSysfsEnv);
    auto proc_nvidia = environment.env.find(ddp::launcher::kProcNvidiaEnv);
    if (ddp::Status s = ddp::launcher::place_workers(
            invocation->config, sysfs == environment.env.end() ? "/sys" : sysfs->second,
            proc_nvidia == environment.env.end() ? ddp::launcher::kDefaultProcNvidia
                                                 : proc_nvidia->second);
        !s) {
      return usage_error(s);
    }
    for (std::size_t r = 0; r < invocation->config.cpu_affinity.size(); ++r) {
      const auto& mems = invocation->config.memory_nodes[r];
      spdlog::info("numa binding: local rank {} on CPUs {}, memory {}", r,
                   ddp::launcher::cpu_list_text(invocation->config.cpu_affinity[r]),
                   mems.empty() ? "default policy"
                                : "preferred on node(s) " + ddp::launcher::cpu_list_text(mems));
    }
  }
  if (invocation->launch.fan_out) {  // this ddprun starts every node's agent (ssh, pbsdsh)
    std::error_code exe_error;
    auto self = std::filesystem::read_symlink("/proc/self/exe", exe_error);
    if (exe_error)
      return usage_error(ddp::io_error("cannot find this ddprun's path: " + exe_error.message()));
    return ddp::launcher::fanout::run(*invocation,
                                      {environment.env, self.string(), environment.cwd});
  }
  return ddp::agent::run(invocation->config);
}
