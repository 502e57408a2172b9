// The daemon's authentication decisions for native rendezvous requests (job secrets, issue
// 21): which job keys it knows, whether a plain (unauthenticated) JOIN may proceed, and whether
// an authenticated frame is genuine. Pure: no I/O, no clock; the NativeHub holds one Gate and
// one ConnectionAuth per connection that sent AUTH_HELLO.
//
// Rules:
//  - A job is keyed (has a job key) or keyless for its whole life. Its first JOIN decides:
//    an authenticated first JOIN registers the key it carries (trust on first use), a plain
//    one makes the job keyless. Keys given at start (pin(): the embedded daemon of a ddprun
//    host knows its job's secret) are never replaced and never forgotten.
//  - A keyed job accepts only authenticated frames whose MAC verifies under its key, on a
//    connection opened for that run id, with the next counter of that connection.
//  - require_secret: plain JOINs are refused, so every job is keyed.
//  - A connection opened (AUTH_HELLO or AUTH_OPEN) for job A can only send frames for A; a
//    JOIN inside a frame must name A.
//  - AUTH_OPEN (no round trip): open() says whether the connection may go on without a daemon
//    challenge: only for a job whose key the daemon knows, and only as OpenGuard allows
//    (open_guard.h). Its first frame must then be a JOIN; when that frame verifies, its nonce
//    is remembered (a second use of a nonce is refused as a replay). When open() says no, the
//    daemon sends a CHALLENGE and the first frame (the agent's optimistic JOIN, MACed before
//    it could see the challenge) is dropped (dropped()): the agent sends it again,
//    challenged. The open's nonce is remembered then too, as soon as the dropped frame's MAC
//    verifies (the key known) or the challenged JOIN's does (the key registered by it), so a
//    recording of a challenged open cannot go through later either.
// Every refusal is a kUnauthenticated Status naming the job and the fix.
//
// Threading: the daemon's io_context thread. Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "rendezvous/auth/auth.h"
#include "rendezvous/auth/key_wrap.h"
#include "rendezvous/auth/open_guard.h"

namespace ddp::rendezvous::auth {

// What one connection agreed with the daemon at AUTH_HELLO.
struct ConnectionAuth {
  std::string run_id;
  Challenge challenge{};
  FrameCounter counter;
  // The connection began with AUTH_OPEN: its nonce and stamp, remembered (OpenGuard) once a
  // MAC under the job key verifies on it; `without_challenge` when the gate accepted it.
  struct Opened {
    Nonce nonce{};
    std::int64_t stamp_ms = 0;
    bool without_challenge = false;
  };
  std::optional<Opened> opened;
  // AUTH_OPEN answered with a CHALLENGE: the next frame is the agent's optimistic JOIN.
  bool drop_next_frame = false;
};

// One authenticated frame as decoded (rendezvous/protocol.h), before its request is trusted.
struct FrameCheck {
  std::uint64_t counter = 0;
  Mac mac{};
  std::optional<KeyWrap> wrap;
  std::string_view covered;  // the bytes the MAC covers after the run id (wrap + request)
  bool is_join = false;
  std::string_view join_run_id;  // when is_join
};

class Gate {
 public:
  // `started_unix_ms`: when this daemon started (OpenGuard's start rule).
  Gate(bool require_secret, std::int64_t started_unix_ms, OpenRules open_rules = {})
      : require_secret_(require_secret), open_guard_(started_unix_ms, open_rules) {}

  bool require_secret() const { return require_secret_; }
  // The embedded daemon's own job: its key from the start, kept for the gate's life. `fresh`:
  // the key was drawn for this daemon's job (a fan-out's secret), so no frame under it can
  // predate the daemon (OpenGuard's start rule does not apply).
  void pin(std::string run_id, const Key& key, bool fresh = false);
  bool keyed(std::string_view run_id) const;

  // A plain JOIN for `run_id`. `job_exists`: the registry has the job (running or finished).
  Status check_plain_join(std::string_view run_id) const;

  // AUTH_OPEN for `run_id` at `now_unix_ms`: kAccept when the connection may go on without a
  // challenge (`conn` is then set up for it); anything else (the job's key is unknown, the
  // guard says no) means: answer with a CHALLENGE and drop the next frame (dropped()).
  OpenVerdict open(ConnectionAuth& conn, const Nonce& nonce, std::int64_t stamp_unix_ms,
                   std::int64_t now_unix_ms) const;
  // The optimistic frame after a challenged AUTH_OPEN, not handled: remembers the open's nonce
  // when the job's key is known and the frame's MAC (under the open's challenge) verifies.
  void dropped(const ConnectionAuth& conn, const FrameCheck& frame, std::int64_t now_unix_ms);
  // Verifies `frame` on `conn` at `now_unix_ms`. `job_exists` as above; `daemon` decrypts a key
  // wrap. OK: the frame's request may be handled; a first JOIN's key is then registered by
  // commit_key() once the registry holds the job (a refused JOIN registers nothing).
  Status verify(ConnectionAuth& conn, const FrameCheck& frame, bool job_exists,
                const KeyPair& daemon, std::int64_t now_unix_ms);
  // After a verified JOIN was handled: keeps the key the frame carried when the job now exists
  // and had none; forgets an unpinned key whose job no longer exists.
  void settle(const std::string& run_id, bool job_exists);

 private:
  struct Entry {
    explicit Entry(const Key& key, bool is_pinned, bool is_fresh)
        : mac(key), pinned(is_pinned), fresh(is_fresh) {}
    MacKey mac;  // the key made ready: one per job, used for every frame of it
    bool pinned;
    bool fresh;
  };
  bool require_secret_;
  OpenGuard open_guard_;
  std::unordered_map<std::string, Entry> keys_;
  // The key a verified first JOIN carried, until settle() keeps or drops it.
  std::optional<std::pair<std::string, Key>> candidate_;
};

}  // namespace ddp::rendezvous::auth
