// ddprun's command line: `ddprun [options] PROGRAM [ARGS...]` into a validated AgentConfig.
//
// Every torchrun option is accepted in both spellings (--nproc-per-node / --nproc_per_node),
// with torchrun's defaults and its PET_<NAME> environment fallbacks (PET_NPROC_PER_NODE, ...;
// an option on the command line wins, an empty variable counts as unset). Everything from
// PROGRAM on belongs to the program, options included.
//
// Worker command: without --no-python the program runs under Python, `python -u PROGRAM ARGS`
// (or `python -u -m MODULE ARGS` with -m); with --no-python it runs as given. The interpreter
// is --python, else $DDPRUN_PYTHON, else $PYTHON_EXEC (torchrun's variable), else `python3`;
// preflight (launcher/preflight.h) resolves it on PATH. torch.distributed.launch scripts:
// `--local-rank-arg underscore|dash` inserts `--local_rank=${local_rank}` (or --local-rank=)
// right after PROGRAM (after -m MODULE), which the agent substitutes per worker
// (agent/workers/worker_args.h); `--use-env` is accepted (LOCAL_RANK is always in the
// environment).
//
// Pure: no I/O except through two seams: the GpuInventory, asked only for --nproc-per-node
// gpu|auto, --gpu-ids and --virtual-local-rank, and LaunchEnvironment::read_file, only for
// --hostfile and $PBS_NODEFILE. Every failure of the input is a kInvalidArgument Status with a
// one-line message naming the problem and the fix (a seam's own error passes through).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "common/status.h"
#include "launcher/gpu_inventory.h"
#include "launcher/launch_plan.h"

namespace ddp::launcher {

// What parsing may read besides the arguments.
struct LaunchEnvironment {
  std::map<std::string, std::string> env;  // the process environment (PET_*, CUDA_VISIBLE_DEVICES)
  const GpuInventory* gpus = nullptr;      // must be set; asked only when needed; not owned
  int cpu_count = 1;                       // for --nproc-per-node cpu|auto
  std::string standalone_run_id;           // the random run id --standalone uses
  // Cluster integration (launcher/cluster_options.cc): this machine's hostname (matched
  // against node lists), the working directory remote agents start in, and the seam that
  // reads the few files options name ($PBS_NODEFILE, --hostfile): called only for those.
  std::string hostname{};
  std::string cwd{};
  std::function<Result<std::string>(const std::string& path)> read_file{};
};

struct Invocation {
  enum class Action { kRun, kHelp, kVersion, kCompletion };
  Action action = Action::kRun;
  std::string text;  // the help text for kHelp, the script for kCompletion

  agent::AgentConfig config;  // valid for kRun
  // Set when the program runs under Python: the interpreter as given (a name looked up on
  // PATH, or a path) and, unless -m, the script preflight checks for.
  std::optional<std::string> python;
  std::optional<std::string> script;
  // One-line notices for the log (options accepted but without effect, ignored values).
  std::vector<std::string> notices;
  // One-line information for the log (the command the other nodes of a static job need).
  std::vector<std::string> info;
  // How the job's nodes are reached (--launcher, --hosts, Slurm/PBS environment).
  LaunchPlan launch;
};

// args: the command line without argv[0].
Result<Invocation> parse_command_line(const std::vector<std::string>& args,
                                      const LaunchEnvironment& environment);

}  // namespace ddp::launcher
