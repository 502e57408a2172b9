// Rate limit for the log lines of refused or closed connections: the first refusal of a key (a
// peer address and a reason) is logged at once, later ones at most once per interval as one line
// carrying how many happened since. A client opening hundreds of sockets a second thus costs a
// line per interval, not a line per socket. Pure: the caller passes the time.
//
// Memory: at most `max_keys` keys are remembered; when full, keys whose last line is older than
// the interval are forgotten first, then (a flood of distinct peers) all of them, which at worst
// logs a peer's next refusal early.
//
// Threading: one thread (the server's io_context).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace ddp::rendezvous {

class RefusalLog {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  explicit RefusalLog(Duration interval = std::chrono::seconds(60), std::size_t max_keys = 4096)
      : interval_(interval), max_keys_(max_keys) {}

  // Records one refusal of `key` at `now`. Returns the count to report (this refusal plus those
  // suppressed since the key's last line) when a line is due now, nullopt when it is suppressed.
  std::optional<std::uint64_t> record(const std::string& key, TimePoint now);

  std::size_t keys() const { return entries_.size(); }

 private:
  struct Entry {
    TimePoint last_line;
    std::uint64_t suppressed = 0;
  };
  void make_room(TimePoint now);

  Duration interval_;
  std::size_t max_keys_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace ddp::rendezvous
