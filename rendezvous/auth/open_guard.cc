#include "rendezvous/auth/open_guard.h"

namespace ddp::rendezvous::auth {
namespace {

std::string key_of(const Nonce& nonce) {
  return std::string(reinterpret_cast<const char*>(nonce.data()), nonce.size());
}

}  // namespace

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
  if (seen_.count(key_of(nonce)) != 0) return OpenVerdict::kSeen;
  if (seen_.size() >= rules_.max_remembered) return OpenVerdict::kMemoryFull;
  return OpenVerdict::kAccept;
}

bool OpenGuard::remember(const Nonce& nonce, std::int64_t now_ms) {
  expire(now_ms);
  std::string key = key_of(nonce);
  if (!seen_.insert(key).second) return false;
  expiry_.emplace_back(now_ms + 2 * rules_.window_ms, std::move(key));
  return true;
}

void OpenGuard::expire(std::int64_t now_ms) {
  while (!expiry_.empty() && expiry_.front().first <= now_ms) {
    seen_.erase(expiry_.front().second);
    expiry_.pop_front();
  }
}

}  // namespace ddp::rendezvous::auth
