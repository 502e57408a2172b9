// Runs a few short commands at once to completion, bounded by a deadline: the ssh probes of
// every host and `pbsdsh --version` before a fan-out starts anything. Each command's stdin is
// /dev/null; its stdout and stderr are captured together. A command still running at the
// deadline has its process group SIGKILLed and counts as timed out.
//
// Threading: blocks the caller; runs its own io_context (call it before the fan-out's).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "proc/exit_status.h"
#include "proc/process_launcher.h"

namespace ddp::launcher::fanout {

struct CommandRun {
  std::optional<proc::ExitStatus> exit;  // unset: it could not start or timed out
  bool timed_out = false;
  std::string output;  // stdout and stderr, interleaved as read
};

// How the fan-out starts a child (these commands, the ssh/pbsdsh sessions): in its own process
// group (a terminal's Ctrl-C reaches only ddprun, which decides how to stop them), with this
// process's environment, not dying with ddprun (an ssh session ends by its stdin's EOF), and a
// program that cannot run is an error of spawn(). stdin_pipe: a pipe held open until
// close_stdin() (the remote agent's --exit-on-stdin-eof lifeline), else /dev/null.
proc::LaunchSpec child_spec(const std::vector<std::string>& argv, bool stdin_pipe);

std::vector<CommandRun> run_commands(const std::vector<std::vector<std::string>>& commands,
                                     std::chrono::milliseconds deadline);

}  // namespace ddp::launcher::fanout
