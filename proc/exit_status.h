// How a process ended, decoded once from the wait status: either an exit code or the
// number of the signal that killed it. Pure value type.
#pragma once

#include <string>

#include "common/signal_name.h"

namespace ddp::proc {

struct ExitStatus {
  int code = 0;    // exit code when signal == 0
  int signal = 0;  // killing signal, 0 when the process exited normally

  static ExitStatus exited(int c) { return {c, 0}; }
  static ExitStatus killed(int s) { return {0, s}; }
  // Decodes a waitpid() status word (WIFEXITED / WIFSIGNALED).
  static ExitStatus from_wait_status(int status);

  bool ok() const { return signal == 0 && code == 0; }
  // The shell convention: the exit code, or 128 + signal number.
  int shell_code() const { return signal != 0 ? 128 + signal : code; }
  // "exit code 3" or "signal 9 (SIGKILL)".
  std::string describe() const;

  bool operator==(const ExitStatus&) const = default;
};

}  // namespace ddp::proc
