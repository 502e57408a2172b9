// The TCPStore wire protocol of PyTorch, both numberings: pure encode/decode, no I/O.
// Used by the session (server side), the client and the fuzz target.
//
// Wire format (all integers raw little-endian as on x86-64; no header, no request id;
// replies come back in request order on the same connection, except STOP_WAITING and
// 1.13 watch pushes, which arrive whenever the event happens):
//
//   str/vec   := u64 length | length bytes
//   request   := u8 query type | arguments
//
//   query         args                         reply
//   ------------  ---------------------------  ---------------------------------------
//   VALIDATE      u32 magic 0x3C85F7CE         none (modern only; first query)
//   SET           key str, value vec           none
//   COMPARE_SET   key, expected vec, desired   vec: value now stored (see store.h)
//   GET           key                          vec (empty for a missing key)
//   ADD           key, i64 delta               i64 new value
//   CHECK         u64 n, n x key               u8 READY=0 | NOT_READY=1
//   WAIT          u64 n, n x key               u8 STOP_WAITING=0, once all keys exist
//   GETNUMKEYS    -                            i64
//   WATCH_KEY     key                          u8 3, then pushes (1.13 only):
//                                                u8 type (UPDATED=0 CREATED=1 DELETED=2),
//                                                key str, old vec, new vec
//   DELETE_KEY    key                          i64 number erased (0 or 1)
//   APPEND        key, value vec               none
//   MULTI_GET     u64 n, n x key               n x vec
//   MULTI_SET     u64 n, n x (key, value)      none
//   CANCEL_WAIT   -                            u8 WAIT_CANCELED=1
//   PING          u32 nonce                    u32 nonce
//   QUEUE_PUSH    key, value vec               none
//   QUEUE_POP     key                          i64 length before pop; if > 0 then vec
//   QUEUE_LEN     key                          i64
//   LIST          -                            i64 n, n x key str
//   BARRIER       key, i64 world_size          u8 STOP_WAITING=0, once world_size arrived
//
//   query type byte   1.13 .. 2.1 (Legacy113)   >= 2.2 (Modern)
//   VALIDATE          -                         0
//   SET .. GETNUMKEYS 0 .. 6                    1 .. 7
//   WATCH_KEY         7                         -
//   DELETE_KEY        8                         8
//   APPEND .. CANCEL  9 .. 12 (2.0 and 2.1)     9 .. 12
//   PING .. LIST      -                         13 .. 17
//   BARRIER           -                         18 (2.14)
//   0x80 .. 0xFF      reserved for ddprun's native rendezvous operations (no PyTorch
//                     version uses them). This parser rejects them; the session's Framer
//                     (framer.h) routes 0x80..0x8F to membership/wire.h before it is called.
//
// Job secrets: three messages of the native range authenticate an agent's native requests
// (rendezvous/auth/auth.h computes the MAC; the NativeHub's Gate decides). Each is framed as
// every native message is (membership/wire.h): `u8 type | u32 n | n bytes of fields`.
//
//   type  message (direction)          fields
//   ----  ---------------------------  ----------------------------------------------------
//   0x88  AUTH_HELLO (agent -> daemon)  run_id str                 reply: CHALLENGE
//   0x97  CHALLENGE  (daemon -> agent)  u8[32] challenge, u8 job_keyed (0/1),
//                                       u8[32] daemon X25519 public key
//   0x89  AUTH_FRAME (agent -> daemon)  u64 counter, u8[32] mac, | covered:
//                                       u8 has_wrap (0/1), [u8[32] agent X25519 public key,
//                                       u8[32] wrapped job key], u64 n, n bytes: one native
//                                       request (membership/wire.h), framed as sent alone
//
//   agent                                        daemon
//     | HELLO, VERSION (membership/wire.h)          |  the version handshake comes first
//     | AUTH_HELLO "job-A"                          |  binds the connection to job-A
//     |-------------------------------------------->|
//     |            CHALLENGE nonce, keyed, dpub     |  nonce: 32 fresh random bytes
//     |<--------------------------------------------|
//     | AUTH_FRAME 0, mac0, wrap?, JOIN             |  mac = HMAC(K_job-A, nonce, counter,
//     |-------------------------------------------->|        run id, covered)
//     | AUTH_FRAME 1, mac1, -, HEARTBEAT ...         |  counter must be 0, 1, 2 ... in order
//
// A wrap is sent only when CHALLENGE said the job has no key yet (trust on first use,
// rendezvous/auth/key_wrap.h).
//
// After AUTH_HELLO a connection's native requests must all be AUTH_FRAMEs; TCPStore
// queries stay as they are. Limits (checked before any allocation): run_id <=
// AuthLimits::max_run_id_bytes, n <= AuthLimits::max_request_bytes.
//
// Dialect detection: a modern client always opens with `00 CE F7 85 3C` (VALIDATE + magic);
// a 1.13 .. 2.1 client cannot (a SET would declare a ~1 GB key). A strict prefix of those bytes
// needs more input; anything else is the 1.13 numbering, which 2.0 and 2.1 only extended (their
// APPEND .. CANCEL_WAIT take codes 1.13 never sends), so one numbering serves 1.13 to 2.1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/codec.h"
#include "rendezvous/auth/auth.h"
#include "rendezvous/auth/key_wrap.h"
#include "rendezvous/limits.h"

namespace ddp::rendezvous {

inline constexpr std::uint32_t kValidateMagic = 0x3C85F7CE;
inline constexpr std::uint8_t kFirstNativeOp = 0x80;  // start of the reserved range

enum class Dialect : std::uint8_t { kLegacy113, kModern };

enum class Op : std::uint8_t {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kWatchKey,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kList,
  kBarrier,
};
inline constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::kBarrier) + 1;

// Reply codes of the one-byte replies.
inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kStopWaiting = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;
inline constexpr std::uint8_t kWatchRegistered = 3;
enum class WatchEvent : std::uint8_t { kUpdated = 0, kCreated = 1, kDeleted = 2 };

std::string_view op_name(Op op);
// The query-type byte of `op` in `dialect`; nullopt when the dialect lacks the op.
std::optional<std::uint8_t> wire_code(Dialect dialect, Op op);
// The op of a query-type byte; nullopt for an unknown byte.
std::optional<Op> op_from_wire(Dialect dialect, std::uint8_t code);

// One decoded request. Binary-safe: keys and values are byte strings. Which fields are
// used depends on `op` (see the table above); the others stay empty.
struct Request {
  Op op = Op::kGetNumKeys;
  std::string key{};                  // single-key ops
  std::string value{};                // SET, APPEND, QUEUE_PUSH value; COMPARE_SET expected
  std::string desired{};              // COMPARE_SET desired
  std::int64_t delta = 0;             // ADD; BARRIER world_size
  std::uint32_t word = 0;             // VALIDATE magic, PING nonce
  std::vector<std::string> keys{};    // CHECK, WAIT, MULTI_GET, MULTI_SET
  std::vector<std::string> values{};  // MULTI_SET (same length as keys)

  bool operator==(const Request&) const = default;
};

// Parses the first request of `input`. Pure; never reads past `input`; every declared
// length and count is checked against `limits` before anything is allocated for it.
codec::Decoded<Request> parse_request(Dialect dialect, std::string_view input,
                                      const Limits& limits);

enum class DialectGuess { kNeedMore, kLegacy113, kModern };
DialectGuess detect_dialect(std::string_view first_bytes);

// Request encoder (client side and tests). Returns nullopt when the dialect lacks the op.
std::optional<std::string> encode_request(Dialect dialect, const Request& request);

// ---- job secrets: AUTH_HELLO, AUTH_FRAME, CHALLENGE (drawn above) ----------------------
inline constexpr std::uint8_t kAuthHelloType = 0x88;
inline constexpr std::uint8_t kAuthFrameType = 0x89;
inline constexpr std::uint8_t kChallengeType = 0x97;

struct AuthLimits {
  std::size_t max_run_id_bytes = 1024;
  std::size_t max_request_bytes = std::size_t{16} << 20;
};

struct AuthFrame {
  std::uint64_t counter = 0;
  auth::Mac mac{};
  std::optional<auth::KeyWrap> wrap;
  std::string covered;             // the bytes after the MAC (what the MAC covers)
  std::size_t request_offset = 0;  // where the inner request starts within `covered`
  std::string_view request() const { return std::string_view(covered).substr(request_offset); }
};

struct ChallengeMessage {
  auth::Challenge challenge{};
  bool job_keyed = false;
  auth::Bytes32 daemon_public{};
  bool operator==(const ChallengeMessage&) const = default;
};

std::string encode_auth_hello(std::string_view run_id);
// The covered part of an AUTH_FRAME: has_wrap, [wrap], u64 n, request.
std::string auth_covered(const std::optional<auth::KeyWrap>& wrap, std::string_view request);
std::string encode_auth_frame(std::uint64_t counter, const auth::Mac& mac,
                              std::string_view covered);
std::string encode_challenge(const ChallengeMessage& challenge);

// Decode the first message of `input` (which starts with the type byte). Pure; lengths are
// checked against `limits` before anything is allocated.
codec::Decoded<std::string> parse_auth_hello(std::string_view input, const AuthLimits& limits);
codec::Decoded<AuthFrame> parse_auth_frame(std::string_view input, const AuthLimits& limits);
codec::Decoded<ChallengeMessage> parse_challenge(std::string_view input);

}  // namespace ddp::rendezvous
