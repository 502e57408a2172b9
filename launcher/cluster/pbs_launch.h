// `ddprun --launcher pbs`, run once from a PBS job script, starts one agent per unique node
// through pbsdsh (the Task Manager spawner every PBS ships). Torque's and PBS Pro's pbsdsh
// share a name but not their flags: docs/cluster.md has the table of what each flag means
// (from their manuals and, for OpenPBS/PBS Pro, src/cmds/pbsdsh.c).
//
// So: Torque gets one `pbsdsh -u -- AGENT...`; PBS Pro gets one `pbsdsh -n I -- AGENT...`
// per unique host, I being the index of that host's first line in PBS_NODEFILE. Neither
// variant gets -o (Torque's would swallow the output, PBS Pro's would not wait for the
// agents). `--` keeps pbsdsh from reading the agent's options as its own. Every agent finds
// its node rank itself, from PBS_NODEFILE and its hostname (pbs_nodefile.h). PBS Pro's pbsdsh
// exits 0 even when tasks fail, so the job's exit code must come from the agents, not from
// pbsdsh. Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/cluster_context.h"
#include "launcher/cluster/pbs_nodefile.h"

namespace ddp::launcher::cluster {

enum class PbsFlavor { kTorque, kPbsPro };

// What is known about the PBS installation, gathered by the caller.
struct PbsFacts {
  std::string pbsdsh_version_output;  // stdout+stderr of `pbsdsh --version` ("" if not run)
  Environment env;                    // DDPRUN_PBS_FLAVOR, PBS_VERSION
};

// In order: DDPRUN_PBS_FLAVOR=torque|pbspro|openpbs (the user's word wins); output holding
// "pbs_version" (OpenPBS/PBS Pro's --version) -> PBS Pro; output or PBS_VERSION mentioning
// TORQUE, or Torque's "Version:" line -> Torque. Otherwise an error asking for
// DDPRUN_PBS_FLAVOR.
Result<PbsFlavor> detect_pbs_flavor(const PbsFacts& facts);

// The pbsdsh command lines (argv, pbsdsh first) that start `agent_argv` once on every node.
std::vector<std::vector<std::string>> pbsdsh_commands(PbsFlavor flavor,
                                                      const std::vector<PbsNode>& nodes,
                                                      const std::string& pbsdsh,
                                                      const std::vector<std::string>& agent_argv);

}  // namespace ddp::launcher::cluster
