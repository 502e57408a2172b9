// Failure reports in torchrun's error-file format, so ddprun's (and torchrun's) root-cause
// table shows why a worker died:
//   {"message": {"message": "<Type>: <text>",
//                "extraInfo": {"py_callstack": "<trace>", "timestamp": "<unix seconds>"}}}
// No LibTorch dependency beyond c10's exception type.
#pragma once

#include <chrono>
#include <exception>
#include <string>

#include "common/status.h"

namespace ddp {

struct ErrorReport {
  std::string type;       // demangled exception type, e.g. "std::runtime_error"
  std::string message;    // what(), without c10's appended backtrace
  std::string traceback;  // stack at the throw site when known, else where it was caught
  std::chrono::system_clock::time_point time = std::chrono::system_clock::now();
};

// Builds a report from an exception (c10::Error contributes its own backtrace); `traceback` is
// used when the exception carries none.
ErrorReport make_error_report(const std::exception_ptr& error, std::string traceback);

// The JSON text torchrun writes for a report.
std::string error_file_json(const ErrorReport& report);

// Writes the JSON to `path` (replacing it atomically via a temporary file). kIo on failure.
Status write_error_file(const std::string& path, const ErrorReport& report);

// The current stack as text (glibc backtrace, demangled where possible).
std::string current_stack_trace();

// Installs a std::terminate handler: an exception that escapes main (or any thread) is written
// to TORCHELASTIC_ERROR_FILE (when set) with the stack of the throw site, printed to stderr,
// and the process exits with status 1. Call once, first thing in main. Idempotent.
void install_error_handler();

}  // namespace ddp
