// Rate limit for the log lines of refused or closed connections, per reason: the first refusal of
// a reason is logged at once, later ones at most once per interval, as one line carrying how many
// happened since. A flood (hundreds of sockets a second, from one address or from thousands)
// thus costs one line per reason per interval and cannot fill a disk. The line names the peer of
// the refusal that wrote it; the others of its interval are only counted. Pure: the caller
// passes the time.
//
// Threading: one thread (the server's io_context).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ddp::rendezvous {

// Why a connection was refused or closed by the connection limits (docs/security.md).
enum class Refusal {
  kTotalFull,
  kPeerFull,
  kDescriptors,
  kFirstRequestTimeout,  // part of a request, then nothing until the deadline
  kStoreNotAllowed,
  kCount,
};

class RefusalLog {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  explicit RefusalLog(Duration interval = std::chrono::seconds(60)) : interval_(interval) {}

  // Records one refusal for `why` at `now`. Returns the count to report (this refusal plus those
  // suppressed since the reason's last line) when a line is due now, nullopt when it is not.
  std::optional<std::uint64_t> record(Refusal why, TimePoint now) {
    Entry& entry = entries_[static_cast<std::size_t>(why)];
    if (entry.last_line && now - *entry.last_line < interval_) {
      ++entry.suppressed;
      return std::nullopt;
    }
    const std::uint64_t count = entry.suppressed + 1;
    entry = Entry{now, 0};
    return count;
  }

 private:
  struct Entry {
    std::optional<TimePoint> last_line;
    std::uint64_t suppressed = 0;
  };

  Duration interval_;
  std::array<Entry, static_cast<std::size_t>(Refusal::kCount)> entries_{};
};

}  // namespace ddp::rendezvous
