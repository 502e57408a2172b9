// The failure report: what a worker wrote to its TORCHELASTIC_ERROR_FILE, which failure
// is the root cause, and torchrun's table. Pure functions, plus read_error_file().
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

#include "agent/workers/supervisor.h"
#include "common/status.h"

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

struct FailureRecord {
  WorkerFailure failure;
  int global_rank = 0;
  std::string error_file;
  std::optional<ErrorFileInfo> error;

  // When it failed: the error file's timestamp, else the time the agent saw the exit.
  double failure_time() const;
};

// Index of the root cause: the smallest failure_time(); ties go to the earlier record.
// Precondition: !records.empty().
std::size_t root_cause_index(const std::vector<FailureRecord>& records);

// torchrun's "<name> FAILED" table: other failures, then the root cause.
std::string format_failure_report(const std::string& name, const std::string& host,
                                  const std::vector<FailureRecord>& records,
                                  std::size_t root_index);

// The program name for the report: for Python workers the script or -m module
// ("python -u x.py" -> "x.py"), else argv[0]'s file name.
std::string program_name(const std::vector<std::string>& worker_argv, bool python);

}  // namespace ddp::agent
