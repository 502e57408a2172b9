// The command line every agent of a multi-node launch gets from the launching ddprun (ssh,
// pbsdsh): each option this ddprun was given explicitly, on its command line or by PET_*,
// as one word `--name=value` (a flag that is on as `--name`; one that is off is left out),
// in the option table's key order, then PROGRAM and its arguments unchanged. The launcher-only
// options (--launcher, --hosts, --hostfile, --ssh-*, --forward-env, --status-port) stay behind.
// The launch that uses it adds the per-node options (node rank, rendezvous endpoint). Pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/raw_options.h"

namespace ddp::launcher {

// fan_out: also leaves out what a fan-out sets for every node itself (launcher/fanout/):
// --nnodes, --nproc-per-node, --rdzv-backend, --rdzv-endpoint, --rdzv-id, --rdzv-conf,
// --local-addr, --exit-on-stdin-eof, --job-report-by-launcher, --secret-from-stdin.
std::vector<std::string> agent_arguments(const RawOptions& raw, bool fan_out = false);

}  // namespace ddp::launcher
