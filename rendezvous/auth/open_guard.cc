#include "rendezvous/auth/open_guard.h"

#include <limits>

namespace ddp::rendezvous::auth {

OpenVerdict OpenGuard::judge(const Nonce& nonce, std::int64_t stamp_ms, std::int64_t now_ms,
                             bool fresh_key) const {
  if (rules_.window_ms <= 0) return OpenVerdict::kOutsideWindow;  // turned off
  // The stamp is the agent's (any value on the wire): a difference that overflows is outside.
  std::int64_t skew = 0;
  if (__builtin_sub_overflow(stamp_ms, now_ms, &skew) || skew > rules_.window_ms ||
      skew < -rules_.window_ms) {
    return OpenVerdict::kOutsideWindow;
  }
  if (!fresh_key && stamp_ms < started_ms_ + rules_.window_ms) {
    return OpenVerdict::kTooSoonAfterStart;
  }
  if (seen_.count(nonce) != 0) return OpenVerdict::kSeen;
  if (seen_.size() >= rules_.max_remembered) return OpenVerdict::kMemoryFull;
  return OpenVerdict::kAccept;
}

bool OpenGuard::remember(const Nonce& nonce, std::int64_t stamp_ms, std::int64_t now_ms) {
  expire(now_ms);
  if (!seen_.insert(nonce).second) return false;
  // Until no clock within the window of the stamp can pass it (a stamp from the future is
  // kept until it is past), plus a window for the daemon's own clock being stepped back.
  const std::int64_t latest = stamp_ms > now_ms ? stamp_ms : now_ms;
  std::int64_t forget_at = 0;
  if (__builtin_add_overflow(latest, 2 * rules_.window_ms, &forget_at)) {
    forget_at = std::numeric_limits<std::int64_t>::max();
  }
  expiry_.emplace(forget_at, nonce);
  return true;
}

void OpenGuard::expire(std::int64_t now_ms) {
  while (!expiry_.empty() && expiry_.begin()->first <= now_ms) {
    seen_.erase(expiry_.begin()->second);
    expiry_.erase(expiry_.begin());
  }
}

}  // namespace ddp::rendezvous::auth
