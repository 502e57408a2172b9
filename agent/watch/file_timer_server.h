// torchrun's file timer, served (TORCHELASTIC_ENABLE_FILE_TIMER=1): a FIFO at
// TORCHELASTIC_TIMER_FILE to which PyTorch's FileTimerClient writes one JSON line per request,
//   {"version": 1, "pid": P, "scope_id": S, "expiration_time": T, "signal": N}
// with T absolute epoch seconds; a release has expiration_time -1. A timer is keyed by
// (pid, scope_id); a new request for the key replaces the old one.
//
// Unlike torchrun's server (a thread that reads for 0.1 s, then checks), expiry is a timer
// armed for the earliest deadline: an expired timer is reported when it expires. For each pid
// whose timers expired, the earliest expired one with a signal > 0 is reported, and every timer
// of that pid is dropped (as torchrun does); a pid with no such timer is logged and dropped.
// Lines that are not requests are ignored with one warning.
//
// Threading: the io_context's thread; on_expired runs there.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agent/watch/fifo_reader.h"
#include "common/lifetime.h"
#include "common/status.h"
#include "proc/line_splitter.h"

namespace ddp::agent {

struct TimerRequest {
  pid_t pid = 0;
  std::string scope_id;
  double expiration_time = 0;  // epoch seconds; negative: release
  int signal = 0;
};

// Errors: kProtocol naming what is missing or wrong.
Result<TimerRequest> parse_timer_request(std::string_view line);

class FileTimerServer {
 public:
  using OnExpired = std::function<void(const TimerRequest& expired)>;
  // Creates the FIFO at `path` (replacing a stale one) and serves it. Errors: kIo.
  static Result<std::unique_ptr<FileTimerServer>> open(boost::asio::io_context& io,
                                                       std::filesystem::path path,
                                                       OnExpired on_expired);
  ~FileTimerServer();
  FileTimerServer(const FileTimerServer&) = delete;
  FileTimerServer& operator=(const FileTimerServer&) = delete;

  // Drops every timer (the agent does at each group's start and end).
  void clear_all();
  // Applies one request (what a line on the FIFO does); public for tests.
  void apply(const TimerRequest& request);
  std::size_t size() const { return timers_.size(); }

  FileTimerServer(boost::asio::io_context& io, OnExpired on_expired);

 private:
  void on_line(std::string_view line);
  void arm();
  void expire();

  boost::asio::steady_timer timer_;
  OnExpired on_expired_;
  std::unique_ptr<FifoReader> fifo_;
  proc::LineSplitter lines_{4096};
  std::map<std::pair<pid_t, std::string>, TimerRequest> timers_;
  bool warned_ = false;
  Lifetime life_;  // last: handlers queued when this dies touch nothing
};

}  // namespace ddp::agent
