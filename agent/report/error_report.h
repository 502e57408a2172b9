// The failure report: what a worker wrote to its TORCHELASTIC_ERROR_FILE, and torchrun's
// "<program> FAILED" table of the rendezvous's failure records (messages.h). Pure functions,
// plus read_error_file().
//
// Error file JSON (what torch's @record and ddprun's worker SDK write):
//   {"message": {"message": "<type>: <text>",
//                "extraInfo": {"py_callstack": "<trace>", "timestamp": "<unix s>"}}}
//   or {"message": "<text>", "timestamp": "<unix s>"}
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

struct ErrorFileInfo {
  std::string message;
  std::string traceback;            // empty when the file has none
  std::optional<double> timestamp;  // unix seconds
};

// Errors: kProtocol with what is wrong ("not JSON", "no message field").
Result<ErrorFileInfo> parse_error_file(std::string_view json);

// nullopt when the file does not exist; a malformed file gives an info whose message says
// so (the report still shows the worker). A timestamp of whole seconds (PyTorch's) is refined
// to the file's write time when that falls within the same second.
std::optional<ErrorFileInfo> read_error_file(const std::filesystem::path& path);

// torchrun's (2.14) "<name> FAILED" table, line for line: the failures other than
// failures[root] under "Failures:", then failures[root] under "Root Cause"; each numbered by
// its place in rank order, host = its node_key, traceback = its traceback, else its message.
// Precondition: root < failures.size().
std::string format_failure_report(const std::string& name,
                                  const std::vector<rendezvous::membership::Failure>& failures,
                                  std::size_t root);

// The program name for the report: for Python workers the script or -m module
// ("python -u x.py" -> "x.py"), else argv[0]'s file name.
std::string program_name(const std::vector<std::string>& worker_argv, bool python);

}  // namespace ddp::agent
