#include "agent/report/error_report.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "common/signal_name.h"

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

using rendezvous::membership::Failure;

constexpr std::size_t kMaxWidth = 60;  // torchrun's bound on its rules

std::string format_time(rendezvous::membership::WallTime at) {
  const std::time_t t =
      std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count();
  std::tm tm{};
  localtime_r(&t, &tm);  // torchrun shows local time
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

// What torchrun shows as the traceback: the stack, else the message, else why there is none.
std::string traceback_text(const Failure& f) {
  std::string text = !f.traceback.empty() ? f.traceback : f.message;
  if (text.empty() && f.exit_code < 0) {
    text = "Signal " + std::to_string(-f.exit_code) + " (" + signal_name(-f.exit_code) +
           ") received by PID " + std::to_string(f.pid);
  }
  if (text.empty())
    text = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html";
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

// One failure's block, without a final newline.
std::string failure_block(std::size_t index, const Failure& f) {
  std::ostringstream os;
  os << "[" << index << "]:\n";
  os << "  time      : " << format_time(f.time) << "\n";
  os << "  host      : " << f.node_key << "\n";
  os << "  rank      : " << f.rank << " (local_rank: " << f.local_rank << ")\n";
  os << "  exitcode  : " << f.exit_code << " (pid: " << f.pid << ")";
  if (f.exit_code < 0) os << "  (" << signal_name(-f.exit_code) << ")";
  os << "\n  error_file: " << (f.error_file.empty() ? "<N/A>" : f.error_file) << "\n";
  os << "  traceback : " << traceback_text(f);
  return os.str();
}

std::size_t longest_line(std::string_view text) {
  std::size_t longest = 0;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    longest = std::max(longest, end - at);
    at = end + 1;
  }
  return longest;
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

std::string format_failure_report(const std::string& name, const std::vector<Failure>& failures,
                                  std::size_t root) {
  std::vector<std::size_t> order(failures.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return failures[a].rank < failures[b].rank;
  });
  const std::string title = name + " FAILED";
  std::size_t width = title.size();
  std::string others, root_block;
  for (std::size_t place = 0; place < order.size(); ++place) {
    std::string block = failure_block(place, failures[order[place]]);
    width = std::max(width, longest_line(block));
    if (order[place] == root) {
      root_block = std::move(block);
    } else {
      others += (others.empty() ? "" : "\n") + block;
    }
  }
  width = std::min(width, kMaxWidth);
  const std::string border(width, '='), rule(width, '-');
  return border + "\n" + title + "\n" + rule + "\nFailures:\n" +
         (others.empty() ? "  <NO_OTHER_FAILURES>" : others) + "\n" + rule +
         "\nRoot Cause (first observed failure):\n" + root_block + "\n" + border + "\n";
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
