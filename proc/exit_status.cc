#include "proc/exit_status.h"

#include <sys/wait.h>

#include <csignal>

namespace ddp::proc {

ExitStatus ExitStatus::from_wait_status(int status) {
  if (WIFSIGNALED(status)) return killed(WTERMSIG(status));
  if (WIFEXITED(status)) return exited(WEXITSTATUS(status));
  return exited(status);  // stopped/continued are never asked for (no WUNTRACED)
}

std::string ExitStatus::describe() const {
  if (signal != 0) return "signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
  return "exit code " + std::to_string(code);
}

}  // namespace ddp::proc
