// `ddprun --print-completion bash|zsh|tcsh`: a shell completion script for ddprun's options,
// generated from the option table (launcher/raw_options.h, public_options()), so a new option
// completes without touching this file. Options with a closed set of values complete those
// values; the others complete file names. Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/raw_options.h"

namespace ddp::launcher {

// The script for `shell` ("bash", "zsh" or "tcsh"); kInvalidArgument naming the three for
// any other shell.
Result<std::string> completion_script(const std::string& shell,
                                      const std::vector<OptionName>& options);

}  // namespace ddp::launcher
