// Checks that need the file system, run after parsing and before anything starts, so that a
// mistake is one error line instead of a failed job:
//  - the command: worker_argv[0] (the Python interpreter, or PROGRAM with --no-python) is found
//    on PATH when it has no '/', and is an executable regular file; worker_argv[0] is replaced
//    by the path found, so the agent need not search PATH;
//  - the script, for Python runs without -m: an existing regular file, not a compiled program
//    (that would need --no-python);
//  - --log-dir: created when missing (with parents) and writable (a probe file is created and
//    removed).
// Every failure is kInvalidArgument with a one-line message naming the fix. Single-threaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/status.h"
#include "launcher/options.h"

namespace ddp::launcher {

// The file `command` names: itself when it contains '/', else the first executable regular
// file in the ':'-separated `path_env` (an empty entry is the current directory).
std::optional<std::filesystem::path> find_executable(const std::string& command,
                                                     const std::string& path_env);

Status preflight(Invocation& invocation, const std::string& path_env);

}  // namespace ddp::launcher
