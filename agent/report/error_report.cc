#include "agent/report/error_report.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/workers/worker_args.h"

namespace ddp::agent {
namespace {

using nlohmann::json;

std::optional<double> parse_timestamp(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return v;
  }
  return std::nullopt;
}

std::string format_time(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);  // torchrun shows local time
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

std::string indent_traceback(const std::string& text) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '\n') out += "      ";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

void append_failure(std::ostringstream& os, std::size_t index, const std::string& host,
                    const FailureRecord& r) {
  const auto& f = r.failure;
  os << "[" << index << "]:\n";
  os << "  time      : " << format_time(r.failure_time()) << "\n";
  os << "  host      : " << host << "\n";
  os << "  rank      : " << r.global_rank << " (local_rank: " << f.local_rank << ")\n";
  os << "  exitcode  : " << f.status.shell_code() << " (pid: " << f.pid << ")";
  if (f.status.signal != 0) os << " killed by " << signal_name(f.status.signal);
  os << "\n";
  os << "  error_file: " << (r.error && !r.error_file.empty() ? r.error_file : "<N/A>") << "\n";
  if (r.error) {
    os << "  message   : " << r.error->message << "\n";
    if (!r.error->traceback.empty()) {
      os << "  traceback : " << indent_traceback(r.error->traceback) << "\n";
    }
  } else if (f.status.signal != 0) {
    os << "  traceback : Signal " << f.status.signal << " (" << signal_name(f.status.signal)
       << ") received by PID " << f.pid << "\n";
  } else {
    os << "  traceback : none (the worker wrote no error file; use torch's @record or the "
          "ddprun worker SDK to get one)\n";
  }
}

}  // namespace

Result<ErrorFileInfo> parse_error_file(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return protocol_error("error file is not valid JSON");
  if (!j.is_object() || !j.contains("message")) {
    return protocol_error("error file has no \"message\" field");
  }
  ErrorFileInfo info;
  const json& m = j["message"];
  if (m.is_string()) {
    info.message = m.get<std::string>();
    if (j.contains("timestamp")) info.timestamp = parse_timestamp(j["timestamp"]);
  } else if (m.is_object()) {
    if (m.contains("message") && m["message"].is_string()) {
      info.message = m["message"].get<std::string>();
    }
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      const json& extra = m["extraInfo"];
      if (extra.contains("py_callstack") && extra["py_callstack"].is_string()) {
        info.traceback = extra["py_callstack"].get<std::string>();
      }
      if (extra.contains("timestamp")) info.timestamp = parse_timestamp(extra["timestamp"]);
    }
  } else {
    return protocol_error("error file \"message\" is neither a string nor an object");
  }
  return info;
}

std::optional<ErrorFileInfo> read_error_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  auto parsed = parse_error_file(buf.str());
  if (parsed) {
    // PyTorch writes whole seconds: ranks failing in the same second would tie. The file's
    // write time within that second orders them (a rank whose error followed another's, e.g.
    // a peer's closed connection, wrote its file later).
    std::error_code ec;
    const auto written = std::filesystem::last_write_time(path, ec);
    if (!ec && parsed->timestamp && *parsed->timestamp == std::floor(*parsed->timestamp)) {
      const double at =
          std::chrono::duration<double>(std::chrono::file_clock::to_sys(written).time_since_epoch())
              .count();
      if (std::floor(at) == *parsed->timestamp) parsed->timestamp = at;
    }
    return *parsed;
  }
  return ErrorFileInfo{"unreadable error file " + path.string() + ": " + parsed.status().message(),
                       "", std::nullopt};
}

double FailureRecord::failure_time() const {
  if (error && error->timestamp) return *error->timestamp;
  return std::chrono::duration<double>(failure.detected.time_since_epoch()).count();
}

std::size_t root_cause_index(const std::vector<FailureRecord>& records) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i].failure_time() < records[best].failure_time()) best = i;
  }
  return best;
}

std::string format_failure_report(const std::string& name, const std::string& host,
                                  const std::vector<FailureRecord>& records,
                                  std::size_t root_index) {
  const std::string rule(60, '-');
  std::ostringstream os;
  os << std::string(60, '=') << "\n" << name << " FAILED\n" << rule << "\nFailures:\n";
  std::size_t shown = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i == root_index) continue;
    append_failure(os, ++shown, host, records[i]);
  }
  if (shown == 0) os << "  <NO_OTHER_FAILURES>\n";
  os << rule << "\nRoot Cause (first observed failure):\n";
  if (root_index < records.size()) append_failure(os, 0, host, records[root_index]);
  os << std::string(60, '=') << "\n";
  return os.str();
}

std::string program_name(const std::vector<std::string>& argv, bool python) {
  if (argv.empty()) return "worker";
  auto base = [](const std::string& p) { return std::filesystem::path(p).filename().string(); };
  if (python) {  // torchrun names the script

    for (std::size_t i = 1; i < argv.size(); ++i) {
      if (argv[i] == "-m" && i + 1 < argv.size()) return argv[i + 1];
      if (!argv[i].starts_with("-")) return base(argv[i]);
    }
  }
  return base(argv[0]);
}

}  // namespace ddp::agent
