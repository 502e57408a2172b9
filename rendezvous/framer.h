// Splits one connection's byte stream into requests: TCPStore queries (either PyTorch
// numbering, detected from the first bytes) and ddprun's native rendezvous requests
// (rendezvous/membership/wire.h). Pure: no I/O; the session feeds it what it received.
//
// One connection may carry both kinds. The agent's first native request is HELLO
// (membership/wire.h's version handshake); a native request before it is refused (kRefused). At a
// request boundary a byte in 0x80..0x8F is a native request (no PyTorch version uses a query type
// above 17), anything else a TCPStore query in the connection's numbering. The first native request
// switches the connection to native mode, which changes only the daemon -> client direction:
//   - before it, TCPStore replies are sent raw, exactly as PyTorch expects;
//   - from it on, pushes (0x90..0x94, 0x96, 0x98, 0x99; membership/wire.h) and the CHALLENGE
//     (0x97) arrive at any time, so every TCPStore query gets exactly one framed reply,
//     `u8 0x95 | u64 n | n bytes of its TCPStore reply` (n may be 0, e.g. for SET or
//     VALIDATE), in query order; a parked WAIT's reply comes when the wait is satisfied. A
//     client that keeps at most one TCPStore query in flight (as rdzv_client.h does) can
//     therefore match every framed reply to its query.
// In native mode a connection whose numbering is still unknown uses the >= 2.2 numbering
// and needs no VALIDATE (one may still be sent; it gets an empty framed reply).
//
// Failure: a malformed or oversized request (either kind) is kError with a message naming
// it; the session closes that connection only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/limits.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

// Push type of a framed TCPStore reply on a native-mode connection (see above).
inline constexpr std::uint8_t kStoreReplyType = 0x95;
// Appends `u8 0x95 | u64 n | reply` to `out`.
void put_store_reply(std::string& out, std::string_view reply);

// kHello: the agent's HELLO (membership/wire.h), which must come before any other native
// request; agent() holds its Version from then on. kAuthHello / kAuthFrame: the job-secret
// messages (protocol.h). A kAuthFrame carries its decoded inner request in `native` and the
// frame itself in `auth`. kRefused: a protocol-1 agent's first native request; `error` says
// why, for that agent (the session sends it in protocol 1's ERROR layout, then closes: the
// bytes after it cannot be framed).
enum class FrameKind {
  kIncomplete,
  kError,
  kRefused,
  kStore,
  kNative,
  kHello,
  kAuthHello,
  kAuthFrame
};

struct Frame {
  FrameKind kind = FrameKind::kIncomplete;
  std::size_t consumed = 0;  // kStore, kNative, kAuthHello, kAuthFrame: bytes used
  std::size_t needed = 0;    // kIncomplete: smallest input size that can make progress
  std::string error;         // kError, kRefused
  Request store;             // kStore (VALIDATE included)
  rendezvous::membership::Request native;  // kNative, kAuthFrame (the inner request)
  std::string hello_run_id;                // kAuthHello
  AuthFrame auth;                          // kAuthFrame
};

class Framer {
 public:
  explicit Framer(const Limits& limits, const rendezvous::membership::WireLimits& wire = {})
      : limits_(limits), wire_(wire) {}

  // Decodes the first request of `input`, which must start at a request boundary.
  Frame next(std::string_view input);

  bool native_mode() const { return native_mode_; }
  const std::optional<rendezvous::membership::Version>& agent() const { return agent_; }
  std::optional<Dialect> dialect() const { return dialect_; }

 private:
  Frame next_store(std::string_view input);
  Frame next_hello(std::uint8_t type, std::string_view input);
  Frame next_auth(std::uint8_t type, std::string_view input);

  Limits limits_;
  rendezvous::membership::WireLimits wire_;
  std::optional<Dialect> dialect_;
  bool validated_ = false;
  bool native_mode_ = false;
  std::optional<rendezvous::membership::Version> agent_;
};

}  // namespace ddp::rendezvous
