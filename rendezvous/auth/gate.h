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
//  - A connection opened (AUTH_HELLO) for job A can only send frames for A; a JOIN inside a
//    frame must name A.
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

namespace ddp::rendezvous::auth {

// What one connection agreed with the daemon at AUTH_HELLO.
struct ConnectionAuth {
  std::string run_id;
  Challenge challenge{};
  FrameCounter counter;
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
  explicit Gate(bool require_secret) : require_secret_(require_secret) {}

  bool require_secret() const { return require_secret_; }
  // The embedded daemon's own job: its key from the start, kept for the gate's life.
  void pin(std::string run_id, const Key& key);
  bool keyed(std::string_view run_id) const;

  // A plain JOIN for `run_id`. `job_exists`: the registry has the job (running or finished).
  Status check_plain_join(std::string_view run_id) const;

  // Verifies `frame` on `conn`. `job_exists` as above; `daemon` decrypts a key wrap. OK: the
  // frame's request may be handled; a first JOIN's key is then registered by settle() once
  // the registry holds the job (a refused JOIN registers nothing).
  Status verify(ConnectionAuth& conn, const FrameCheck& frame, bool job_exists,
                const KeyPair& daemon);
  // After a verified JOIN was handled: keeps the key the frame carried when the job now exists
  // and had none; forgets an unpinned key whose job no longer exists.
  void settle(const std::string& run_id, bool job_exists);

 private:
  struct Entry {
    explicit Entry(const Key& key, bool is_pinned) : mac(key), pinned(is_pinned) {}
    MacKey mac;  // the key made ready: one per job, used for every frame of it
    bool pinned;
  };
  bool require_secret_;
  std::unordered_map<std::string, Entry> keys_;
  // The key a verified first JOIN carried, until settle() keeps or drops it.
  std::optional<std::pair<std::string, Key>> candidate_;
};

}  // namespace ddp::rendezvous::auth
