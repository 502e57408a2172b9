#include "agent/watch/file_timer_server.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

namespace ddp::agent {

namespace {
double now_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

Result<TimerRequest> parse_timer_request(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return protocol_error("not a JSON object");
  for (const char* key : {"pid", "scope_id", "expiration_time"}) {
    if (!j.contains(key)) return protocol_error(std::string("no \"") + key + "\" field");
  }
  if (!j["pid"].is_number_integer() || !j["scope_id"].is_string() ||
      !j["expiration_time"].is_number() ||
      (j.contains("signal") && !j["signal"].is_number_integer())) {
    return protocol_error("a field has the wrong type");
  }
  TimerRequest r;
  r.pid = j["pid"].get<pid_t>();
  r.scope_id = j["scope_id"].get<std::string>();
  r.expiration_time = j["expiration_time"].get<double>();
  r.signal = j.value("signal", 0);
  if (r.pid <= 0) return protocol_error("pid must be positive");
  return r;
}

Result<std::unique_ptr<FileTimerServer>> FileTimerServer::open(boost::asio::io_context& io,
                                                               std::filesystem::path path,
                                                               OnExpired on_expired) {
  auto server = std::make_unique<FileTimerServer>(io, std::move(on_expired));
  auto fifo = FifoReader::open(io, std::move(path), "timer file",
                               [s = server.get()](std::string_view bytes) {
                                 s->lines_.feed(bytes, [s](std::string_view l) { s->on_line(l); });
                               });
  if (!fifo) return fifo.status();
  server->fifo_ = std::move(fifo).value();
  return server;
}

FileTimerServer::FileTimerServer(boost::asio::io_context& io, OnExpired on_expired)
    : timer_(io), on_expired_(std::move(on_expired)) {}

FileTimerServer::~FileTimerServer() { timer_.cancel(); }

void FileTimerServer::on_line(std::string_view line) {
  auto request = parse_timer_request(line);
  if (request) return apply(*request);
  if (!warned_) {
    warned_ = true;
    spdlog::warn("timer file {}: ignoring a line that is not a timer request ({})",
                 fifo_->path().string(), request.status().message());
  }
}

void FileTimerServer::apply(const TimerRequest& request) {
  auto key = std::make_pair(request.pid, request.scope_id);
  if (request.expiration_time < 0) {
    timers_.erase(key);
  } else {
    timers_[key] = request;
  }
  arm();
}

void FileTimerServer::clear_all() {
  timers_.clear();
  arm();
}

void FileTimerServer::arm() {
  timer_.cancel();
  if (timers_.empty()) return;
  double earliest = timers_.begin()->second.expiration_time;
  for (const auto& [key, t] : timers_) earliest = std::min(earliest, t.expiration_time);
  const double delay = std::max(0.0, earliest - now_epoch());
  timer_.expires_after(std::chrono::microseconds(static_cast<std::int64_t>(delay * 1e6)));
  timer_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
    if (!ec) expire();
  }));
}

void FileTimerServer::expire() {
  const double now = now_epoch();
  std::map<pid_t, const TimerRequest*> chosen;  // per pid: earliest expired with a signal
  std::set<pid_t> expired_pids;
  for (const auto& [key, t] : timers_) {
    if (t.expiration_time > now) continue;
    expired_pids.insert(t.pid);
    if (t.signal <= 0) continue;
    auto& c = chosen[t.pid];
    if (c == nullptr || t.expiration_time < c->expiration_time) c = &t;
  }
  std::vector<TimerRequest> fire;
  for (pid_t pid : expired_pids) {
    if (chosen.contains(pid)) {
      fire.push_back(*chosen[pid]);
    } else {
      spdlog::info("timer file: an expired timer of pid {} names no signal; not killing it", pid);
    }
  }
  for (pid_t pid : expired_pids) {
    std::erase_if(timers_, [pid](const auto& entry) { return entry.first.first == pid; });
  }
  arm();
  for (const auto& t : fire) on_expired_(t);
}

}  // namespace ddp::agent
