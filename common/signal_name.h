// Names of signals and of exit codes, for messages. Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace ddp {

// "SIGKILL" for 9; "SIG<n>" for numbers without a name.
std::string signal_name(int signal);

// A worker's exit in torchrun's wire convention (negative: killed by signal -code) as the
// root-cause table prints it: "3", or "137 (killed by SIGKILL)".
std::string describe_exit_code(std::int32_t code);

}  // namespace ddp
