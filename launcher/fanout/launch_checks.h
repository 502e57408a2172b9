// What a fan-out checks before it starts anything (launcher/fanout/fanout.h), each failure a
// kInvalidArgument with one line naming the problem and the fix:
//  - probe_ssh_hosts: every host of an ssh launch answers `ssh ... HOST true` in batch mode,
//    all probed at once, each bounded by ConnectTimeout (10 s) and the whole by 20 s;
//  - find_pbs_flavor: Torque or PBS Pro (DDPRUN_PBS_FLAVOR, else `pbsdsh --version`,
//    launcher/cluster/pbs_launch.h); pbsdsh missing from PATH is an error.
// Both run child processes and block the caller (command_runs.h).
#pragma once

#include "common/status.h"
#include "launcher/cluster/pbs_launch.h"
#include "launcher/options.h"

namespace ddp::launcher::fanout {

Status probe_ssh_hosts(const launcher::Invocation& invocation);

Result<cluster::PbsFlavor> find_pbs_flavor(const cluster::Environment& env);

}  // namespace ddp::launcher::fanout
