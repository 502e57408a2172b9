// Whether a connection opened with AUTH_OPEN may skip the daemon's challenge (0-RTT), and the
// replay guard for those that do. Pure: the caller passes wall-clock times (unix ms); no I/O.
//
// An AUTH_OPEN carries the agent's nonce and its wall clock; its first frame (a JOIN) is MACed
// over open_challenge(nonce, time) (auth.h) instead of a challenge the daemon drew. What
// stops a recorded AUTH_OPEN + JOIN from being replayed:
//  - window: the stamped time must be within `window` of the daemon's clock, so a recording
//    is worthless after `window`;
//  - seen nonces: the nonce of every open whose agent proved the job key on that connection
//    (its JOIN verified, with or without a challenge; see gate.h) is kept until its stamp can
//    no longer pass the window (stamp or now, whichever is later, + 2 x window), so a
//    recording replayed to this daemon is challenged: also the open of a job's first agent,
//    challenged because the key was not known yet, and an open stamped in the future by an
//    agent whose clock runs ahead;
//  - start rule: this daemon's memory of nonces begins when it starts, so a recording made
//    for an earlier daemon (the same job key before a restart) could pass the window and the
//    empty memory. A stamp is therefore accepted only from `window` after this daemon's start
//    on (an agent clock up to `window` off still cannot date an old recording past it), except
//    for keys that cannot predate this daemon (fresh: drawn for this daemon's one job by the
//    ddprun that runs it).
// A verdict other than kAccept is not a refusal: the daemon answers with a CHALLENGE and the
// agent proves itself the usual way (one round trip more). Nothing an attacker sends is kept
// before a MAC under the job key verified (remember() is called only then), so opens cannot
// fill the memory; a full memory (max_remembered) only turns 0-RTT off until entries expire
// (remember() still keeps every nonce it is given).
// What is left: a recording of an open stamped more than a window in the future (an agent
// clock running ahead), replayed when its stamp comes due to a daemon restarted meanwhile
// that knows the same job key (same secret and run id): the start rule cannot see it.
//
// Threading: the daemon's io_context thread. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_set>
#include <utility>

#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {

struct OpenRules {
  std::int64_t window_ms = 10'000;  // 0: every open is challenged
  std::size_t max_remembered = std::size_t{1} << 20;
};

// kUnknownKey is the Gate's (no key for the job: it must be registered, challenged).
enum class OpenVerdict {
  kAccept,
  kUnknownKey,
  kOutsideWindow,
  kTooSoonAfterStart,
  kSeen,
  kMemoryFull
};

class OpenGuard {
 public:
  explicit OpenGuard(std::int64_t started_unix_ms, OpenRules rules = {})
      : started_ms_(started_unix_ms), rules_(rules) {}

  // May an AUTH_OPEN stamped `stamp_ms` with `nonce` skip the challenge, at `now_ms`?
  // `fresh_key`: the job's key cannot predate this daemon (see above). Changes nothing.
  OpenVerdict judge(const Nonce& nonce, std::int64_t stamp_ms, std::int64_t now_ms,
                    bool fresh_key) const;
  // Records `nonce` (of an open stamped `stamp_ms`) as used, once a MAC under the job key
  // verified on its connection. False when it was already used (a replay racing the original
  // on another connection): an open's JOIN must then be refused.
  bool remember(const Nonce& nonce, std::int64_t stamp_ms, std::int64_t now_ms);

  std::size_t remembered() const { return seen_.size(); }
  const OpenRules& rules() const { return rules_; }

 private:
  void expire(std::int64_t now_ms);

  std::int64_t started_ms_;
  OpenRules rules_;
  // Nonces are random (only those whose MAC verified are kept): their first bytes hash well.
  struct NonceHash {
    std::size_t operator()(const Nonce& n) const {
      std::size_t h = 0;
      std::memcpy(&h, n.data(), sizeof h);
      return h;
    }
  };
  std::unordered_set<Nonce, NonceHash> seen_;
  std::multimap<std::int64_t, Nonce> expiry_;  // forget at -> nonce
};

}  // namespace ddp::rendezvous::auth
