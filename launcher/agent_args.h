// The command line every agent of a multi-node launch gets from the launching ddprun (ssh,
// pbsdsh): each option this ddprun was given explicitly, on its command line or by PET_*,
// as one word `--name=value` (a flag that is on as `--name`; one that is off is left out),
// in the option table's key order, then PROGRAM and its arguments unchanged. The launcher-only
// options (--launcher, --hosts, --hostfile, --ssh-*, --forward-env) stay behind. The
// launch that uses it adds the per-node options (node rank, rendezvous endpoint). Pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/raw_options.h"

namespace ddp::launcher {

std::vector<std::string> agent_arguments(const RawOptions& raw);

}  // namespace ddp::launcher
