#include "agent/report/event_log.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "common/signal_name.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;
using Json = nlohmann::ordered_json;

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  long millis = static_cast<long>(ms % 1000);
  if (millis < 0) {  // before 1970: floor, not truncate toward zero
    millis += 1000;
    --seconds;
  }
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%03ldZ", millis);
  return text;
}

namespace {

double unix_seconds(std::chrono::system_clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  return static_cast<double>(ms) / 1000.0;
}

Json or_null(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

// A worker's end in the log's vocabulary: exit_code (null when killed), signal (null when not).
void put_exit(Json& j, int exit_code, int signal) {
  j["exit_code"] = signal != 0 ? Json(nullptr) : Json(exit_code);
  j["signal"] = signal != 0 ? Json(signal_name(signal)) : Json(nullptr);
}

// A failure in the rendezvous's vocabulary (exit_code < 0: killed by signal -exit_code).
Json failure_json(const membership::Failure& f, const std::string& own_host) {
  Json j;
  // node_key is "<advertised address>:<agent pid>"; a single node's failures carry none.
  std::string host = f.node_key.substr(0, f.node_key.rfind(':'));
  j["host"] = f.node_key.empty() ? own_host : host;
  j["node"] = or_null(f.node_key);
  j["rank"] = f.rank;
  j["local_rank"] = f.local_rank;
  j["group_rank"] = f.group_rank;
  put_exit(j, f.exit_code < 0 ? 0 : f.exit_code, f.exit_code < 0 ? -f.exit_code : 0);
  j["pid"] = f.pid;
  j["time"] = rfc3339_utc(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(f.time.time_since_epoch())));
  j["error_file"] = or_null(f.error_file);
  j["message"] = or_null(f.message);
  j["traceback"] = or_null(f.traceback);
  return j;
}

const char* outcome_name(Outcome::Kind kind) {
  switch (kind) {
    case Outcome::Kind::kSucceeded:
      return "succeeded";
    case Outcome::Kind::kFailed:
      return "failed";
    case Outcome::Kind::kInterrupted:
      return "interrupted";
    case Outcome::Kind::kError:
      return "error";
  }
  return "error";
}

}  // namespace

// One line: the common keys first, then the event's own, written when it goes out of scope.
class EventLog::Line {
 public:
  Line(EventLog& log, const char* event) : log_(log) {
    const auto t = log.now_ ? log.now_() : std::chrono::system_clock::now();
    j_["ts"] = rfc3339_utc(t);
    j_["ts_unix"] = unix_seconds(t);
    j_["event"] = event;
    j_["run_id"] = log.origin_.run_id;
    j_["host"] = log.origin_.host;
    j_["agent_pid"] = log.origin_.agent_pid;
    const auto& p = log.position_;
    j_["round"] = p ? Json(p->round) : Json(nullptr);
    j_["restart_count"] = p ? Json(p->restart_count) : Json(nullptr);
    j_["group_rank"] = p ? Json(p->group_rank) : Json(nullptr);
  }
  ~Line() { log_.sink_->write_line(j_.dump(-1, ' ', false, Json::error_handler_t::replace)); }
  Json& operator[](const char* key) { return j_[key]; }

 private:
  EventLog& log_;
  Json j_;
};

EventLog::EventLog(std::unique_ptr<EventSink> sink, EventOrigin origin, WallClock now)
    : sink_(std::move(sink)), origin_(std::move(origin)), now_(std::move(now)) {}

void EventLog::join() {
  if (!sink_) return;
  Line line(*this, "join");
  line["backend"] = origin_.backend;
  line["endpoint"] = or_null(origin_.endpoint);
  line["min_nodes"] = origin_.job.min_nodes;
  line["max_nodes"] = origin_.job.max_nodes;
  line["nproc_per_node"] = origin_.nproc_per_node;
  line["max_restarts"] = origin_.job.max_restarts;
}

void EventLog::round(const Round& r) {
  position_ = Position{r.round, r.restart_count, r.group_rank};
  if (!sink_) return;
  Line line(*this, "round");
  line["group_world_size"] = r.group_world_size;
  line["rank_offset"] = r.rank_offset;
  line["world_size"] = r.world_size;
  line["store_addr"] = r.store_addr;
  line["store_port"] = r.store_port;
}

void EventLog::restart(const Round& next, std::uint64_t previous_round,
                       int previous_restart_count) {
  position_ = Position{next.round, next.restart_count, next.group_rank};
  if (!sink_) return;
  Line line(*this, "restart");
  line["previous_round"] = previous_round;
  line["previous_restart_count"] = previous_restart_count;
  // A re-rendezvous for a node that arrived or left uses no restart.
  line["counted"] = position_ && position_->restart_count > previous_restart_count;
}

void EventLog::workers_started(int attempt, const std::vector<StartedWorker>& workers) {
  if (!sink_) return;
  Line line(*this, "workers_started");
  line["attempt"] = attempt;
  Json list = Json::array();
  for (const auto& w : workers) {
    list.push_back(Json{{"local_rank", w.local_rank}, {"rank", w.rank}, {"pid", w.pid}});
  }
  line["workers"] = std::move(list);
}

void EventLog::worker_exited(int local_rank, int rank, pid_t pid, proc::ExitStatus status) {
  if (!sink_) return;
  Line line(*this, "worker_exited");
  line["local_rank"] = local_rank;
  line["rank"] = rank;
  line["pid"] = pid;
  Json exit;
  put_exit(exit, status.code, status.signal);
  line["exit_code"] = exit["exit_code"];
  line["signal"] = exit["signal"];
}

void EventLog::workers_hung(const HangReport& report) {
  if (!sink_) return;
  Line line(*this, "workers_hung");
  const bool timer = report.kind == HangReport::Kind::kTimer;
  line["kind"] = timer ? "timer" : "silent";
  line["local_ranks"] = report.local_ranks;
  line["descriptions"] = report.descriptions;
  line["pid"] = timer ? Json(report.pid) : Json(nullptr);
  line["scope"] = timer ? or_null(report.scope) : Json(nullptr);
  line["signal"] = timer && report.signal != 0 ? Json(signal_name(report.signal)) : Json(nullptr);
}

void EventLog::stop_requested(std::uint64_t round, const std::string& detail) {
  if (!sink_) return;
  Line line(*this, "stop_requested");
  line["stop_round"] = round;
  line["detail"] = detail;
}

void EventLog::straggler(const rendezvous::membership::Straggler& straggler) {
  if (!sink_) return;
  Line line(*this, "straggler");
  line["rank"] = straggler.rank;
  line["step_time_seconds"] = std::chrono::duration<double>(straggler.step_time).count();
  line["median_seconds"] = std::chrono::duration<double>(straggler.median).count();
  line["reports"] = straggler.reports;
  line["removed"] = straggler.removed;
}

void EventLog::workers_done(const WorkersResult& result) {
  if (!sink_) return;
  Line line(*this, "workers_done");
  line["outcome"] = outcome_name(result.outcome.kind);
  line["signal"] = result.outcome.kind == Outcome::Kind::kInterrupted
                       ? Json(signal_name(result.outcome.signal))
                       : Json(nullptr);
  line["error"] = result.outcome.kind == Outcome::Kind::kError
                      ? or_null(result.outcome.error.message())
                      : Json(nullptr);
  Json failures = Json::array();
  for (const auto& f : result.failures) failures.push_back(failure_json(f, origin_.host));
  line["failures"] = std::move(failures);
}

void EventLog::failure(const membership::JobFinished& finished) {
  if (!sink_) return;
  Line line(*this, "failure");
  line["exit_code"] = finished.exit_code;
  line["reason"] = or_null(finished.reason);
  line["root_cause"] =
      finished.root_cause ? failure_json(*finished.root_cause, origin_.host) : Json(nullptr);
}

void EventLog::signal(int signal) {
  if (!sink_) return;
  Line line(*this, "signal");
  line["signal"] = signal_name(signal);
}

void EventLog::lost(const std::string& why) {
  if (!sink_) return;
  Line line(*this, "lost");
  line["reason"] = why;
}

void EventLog::finish(int exit_code, const std::string& why,
                      const std::optional<membership::Goodput>& goodput) {
  if (!sink_) return;
  Line line(*this, "finish");
  line["exit_code"] = exit_code;
  line["why"] = why;
  auto seconds = [](membership::Duration d) { return std::chrono::duration<double>(d).count(); };
  line["goodput"] = goodput ? Json(goodput->ratio()) : Json(nullptr);
  line["stepping_seconds"] = goodput ? Json(seconds(goodput->stepping)) : Json(nullptr);
  line["wall_seconds"] = goodput ? Json(seconds(goodput->wall)) : Json(nullptr);
}

}  // namespace ddp::agent
