#include "launcher/status_command.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/host_port.h"
#include "launcher/http_get.h"

namespace ddp::launcher {
namespace {

using nlohmann::json;

constexpr int kUnreachable = 1;
constexpr int kUsage = 2;
constexpr int kUnknownJob = 3;

constexpr const char* kUsageText =
    "usage: ddprun status HOST[:PORT] [RUN_ID] [--json]\n"
    "  Shows the jobs of the rendezvous daemon whose status port (--status-port) is HOST:PORT\n"
    "  (default port 29401): a table of jobs, or RUN_ID's job, its nodes and the last lines\n"
    "  of its failed workers.\n"
    "  --json  print the status port's JSON as it is (/api/jobs or /api/jobs/RUN_ID)\n"
    "exit codes: 0 ok, 1 status port unreachable, 2 bad arguments, 3 unknown RUN_ID\n";

std::string text(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Fixed-width columns; the last column is left unpadded.
std::string render(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
  return out.str();
}

std::string failure_text(const json& job) {
  const json* f = nullptr;
  if (job.contains("root_cause") && !job["root_cause"].is_null()) {
    f = &job["root_cause"];
  } else if (job.contains("last_failure") && !job["last_failure"].is_null() &&
             !job["last_failure"]["failure"].is_null()) {
    f = &job["last_failure"]["failure"];
  }
  if (f != nullptr) {
    std::string message = text((*f)["message"]);
    message = message.substr(0, message.find('\n'));
    if (message.size() > 60) message = message.substr(0, 57) + "...";
    return "rank " + text((*f)["rank"]) + " on " + text((*f)["node_key"]) + ": " +
           text((*f)["exit"]) + (message.empty() || message == "-" ? "" : " (" + message + ")");
  }
  if (job.contains("last_failure") && !job["last_failure"].is_null()) {
    return text(job["last_failure"]["detail"]);
  }
  return "-";
}

// "83.5%" (docs/goodput.md), or "-" from a daemon that does not report it.
std::string goodput_text(const json& job) {
  if (!job.contains("goodput") || !job["goodput"].is_number()) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * job["goodput"].get<double>());
  return buf;
}

std::string seconds_text(const json& v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fs", v.is_number() ? v.get<double>() : 0.0);
  return buf;
}

// "0", "2 (rank 3 0.80s, rank 5 0.90s; median 0.30s)" (docs/stragglers.md): the flagged count,
// then at most 4 of the flagged ranks /api/jobs lists with their step times, and the median;
// "-" from a daemon that does not report stragglers.
std::string stragglers_text(const json& job) {
  if (!job.contains("stragglers") || !job["stragglers"].is_number()) return "-";
  const json ranks = job.value("straggler_ranks", json::array());
  if (ranks.empty() || !ranks.is_array()) return text(job["stragglers"]);
  constexpr std::size_t kShown = 4;
  std::string out = text(job["stragglers"]) + " (";
  for (std::size_t i = 0; i < std::min(ranks.size(), kShown); ++i) {
    out += (i ? ", rank " : "rank ") + text(ranks[i]["rank"]) + " " +
           seconds_text(ranks[i]["step_seconds"]);
  }
  return out + (ranks.size() > kShown ? ", ..." : "") + "; median " +
         seconds_text(job["median_step_seconds"]) + ")";
}

std::vector<std::string> job_row(const json& j) {
  std::string state = text(j["state"]);
  if (!j["exit_code"].is_null()) state += " (exit " + text(j["exit_code"]) + ")";
  return {text(j["run_id"]),     state,
          text(j["round"]),      text(j["restart_count"]) + "/" + text(j["max_restarts"]),
          text(j["node_count"]), text(j["world_size"]),
          goodput_text(j),       stragglers_text(j),
          failure_text(j)};
}

// The job's failed workers with their last lines and stack heads (docs/diagnosis.md).
std::string failed_workers_text(const json& j) {
  if (!j.contains("failed_workers") || j["failed_workers"].empty()) return "";
  std::string out = "\nfailed workers of the last failed round (" +
                    std::to_string(j["failed_workers"].size()) + " shown of " +
                    text(j["failed_worker_count"]) + "):\n";
  for (const json& f : j["failed_workers"]) {
    out += "rank " + text(f["rank"]) + " (local rank " + text(f["local_rank"]) + ") on " +
           text(f["node_key"]) + ": " + text(f["exit"]) + " at " + text(f["time"]) + "\n";
    for (const auto& [key, title] : {std::pair{"last_lines", "last lines of output"},
                                     std::pair{"stack_head", "head of its stack file"}}) {
      if (!f.contains(key) || f[key].empty()) continue;
      out += std::string("  ") + title + ":\n";
      for (const json& line : f[key]) out += "    " + text(line) + "\n";
    }
  }
  return out;
}

const std::vector<std::string> kJobHeader = {"RUN ID",   "STATE",      "ROUND",
                                             "RESTARTS", "NODES",      "WORKERS",
                                             "GOODPUT",  "STRAGGLERS", "LAST FAILURE"};

}  // namespace

Result<StatusArgs> parse_status_args(const std::vector<std::string>& args) {
  StatusArgs out;
  std::vector<std::string> positional;
  for (const std::string& a : args) {
    if (a == "--json") {
      out.json = true;
    } else if (a == "-h" || a == "--help") {
      return cancelled(kUsageText);
    } else if (!a.empty() && a[0] == '-') {
      return invalid_argument("unknown option '" + a +
                              "'; usage: ddprun status HOST[:PORT] "
                              "[RUN_ID] [--json]");
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty() || positional.size() > 2) {
    return invalid_argument(
        std::string(positional.empty() ? "no HOST given" : "too many arguments") +
        "; usage: ddprun status HOST[:PORT] [RUN_ID] [--json]");
  }
  const std::string& endpoint = positional[0];
  // A name, an IPv4 address, [ADDR]:PORT, or a bare IPv6 address (without a port).
  auto parsed = parse_host_port(endpoint, BareIpv6::kHost);
  if (!parsed) {
    return invalid_argument("'" + endpoint + "': " + parsed.status().message() +
                            "; usage: ddprun status HOST[:PORT], [ADDR]:PORT for IPv6");
  }
  out.host = parsed->host;
  out.port = parsed->port.value_or(out.port);
  if (positional.size() == 2) out.run_id = positional[1];
  return out;
}

Result<std::string> format_status_table(const std::string& json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return protocol_error("the status port's answer is not JSON");
  }
  try {
    if (doc.contains("jobs")) {
      if (doc["jobs"].empty()) return std::string("no jobs\n");
      std::vector<std::vector<std::string>> rows{kJobHeader};
      for (const json& j : doc["jobs"]) rows.push_back(job_row(j));
      return render(rows);
    }
    if (!doc.contains("job")) return protocol_error("the status port's answer has no jobs");
    const json& j = doc["job"];
    std::string out = render({kJobHeader, job_row(j)});
    out += "\n";
    std::vector<std::vector<std::string>> nodes{
        {"NODE", "ADDRESS", "GROUP RANK", "RANKS", "WORKERS", "ROLE"}};
    for (const json& n : j["nodes"]) {
      std::string ranks = "-";
      if (!n["first_rank"].is_null()) {
        ranks = n["first_rank"] == n["last_rank"]
                    ? text(n["first_rank"])
                    : text(n["first_rank"]) + "-" + text(n["last_rank"]);
      }
      nodes.push_back({text(n["node_key"]), text(n["addr"]), text(n["group_rank"]), ranks,
                       text(n["local_world_size"]), text(n["role"])});
    }
    out += nodes.size() == 1 ? "no nodes\n" : render(nodes);
    return out + failed_workers_text(j);
  } catch (const json::exception& e) {  // a field of the wrong type
    return protocol_error(std::string("unexpected JSON from the status port: ") + e.what());
  }
}

int run_status_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parse_status_args(args);
  if (!parsed) {
    if (parsed.status().code() == ErrorCode::kCancelled) {
      out << parsed.status().message();
      return 0;
    }
    err << "ddprun status: error: " << parsed.status().message() << std::endl;
    return kUsage;
  }
  std::string target = "/api/jobs";
  if (parsed->run_id) {
    std::string escaped;
    for (unsigned char c : *parsed->run_id) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
        escaped += static_cast<char>(c);
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        escaped += buf;
      }
    }
    target += "/" + escaped;
  }
  auto answer = http_get(parsed->host, parsed->port, target, std::chrono::seconds(10));
  if (!answer) {
    err << "ddprun status: error: " << answer.status().message() << std::endl;
    return kUnreachable;
  }
  if (answer->status == 404 && parsed->run_id) {
    err << "ddprun status: error: the daemon has no job '" << *parsed->run_id
        << "' (finished jobs are kept for 30 min); run `ddprun status " << args.front()
        << "` to list its jobs" << std::endl;
    return kUnknownJob;
  }
  if (answer->status != 200) {
    std::string body = answer->body.substr(0, answer->body.find('\n'));
    err << "ddprun status: error: the status port answered HTTP " << answer->status << ": " << body
        << std::endl;
    return kUnreachable;
  }
  if (parsed->json) {
    out << answer->body << '\n';
    return 0;
  }
  auto table = format_status_table(answer->body);
  if (!table) {
    err << "ddprun status: error: " << table.status().message() << std::endl;
    return kUnreachable;
  }
  out << *table;
  return 0;
}

}  // namespace ddp::launcher
