#include "agent/exit_status.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace ddp::agent {

ExitStatus ExitStatus::from_wait_status(int status) {
  if (WIFSIGNALED(status)) return killed(WTERMSIG(status));
  if (WIFEXITED(status)) return exited(WEXITSTATUS(status));
  return exited(status);  // stopped/continued are never asked for (no WUNTRACED)
}

std::string ExitStatus::describe() const {
  if (signal != 0) return "signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
  return "exit code " + std::to_string(code);
}

std::string signal_name(int signal) {
  // sigabbrev_np is glibc >= 2.32 and returns the name without the SIG prefix.
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "SIG" + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

}  // namespace ddp::agent
