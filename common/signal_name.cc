#include "common/signal_name.h"

#include <cstring>

namespace ddp {

std::string signal_name(int signal) {
  // sigabbrev_np is glibc >= 2.32 and returns the name without the SIG prefix.
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "SIG" + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

std::string describe_exit_code(std::int32_t code) {
  if (code >= 0) return std::to_string(code);
  const int signal = -code;
  return std::to_string(128 + signal) + " (killed by " + signal_name(signal) + ")";
}

}  // namespace ddp
