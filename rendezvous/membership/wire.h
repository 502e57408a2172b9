// Wire messages of ddprun's native rendezvous operations: pure encode/decode, no I/O.
//
// They live in the query-type range rendezvous/protocol.h reserves for ddprun (0x80..0xFF,
// which no PyTorch version uses); this library takes 0x80..0x9F: requests 0x80..0x8F,
// pushes 0x90..0x9F, the rest stays free. Integers raw host-order (little-endian on x86-64),
// str := u64 length | bytes (common/codec.h). Durations are i64 milliseconds, times i64
// microseconds since the Unix epoch, booleans u8 0/1.
//
// Native protocol 2. Every message is `u8 type | u32 n | n bytes of fields`, and so is every
// failure and rank record inside one (u32 n | fields): a reader skips the fields after those
// it knows and reads fields a sender did not send as their defaults (0, empty, false), so a
// field added at the end of a message needs no new protocol number. A change that an older
// peer cannot read that way raises kProtocol, and raises kOldestProtocol when this build no
// longer speaks the older one.
//
// The version handshake: an agent's first native message on a connection is HELLO, before
// AUTH_HELLO and JOIN; the daemon answers VERSION. They work together when each one's protocol
// is at least the other's oldest; otherwise the daemon closes the connection after VERSION and
// the agent's join ends with kProtocol naming both ddprun versions and what to upgrade.
// Protocol 1 (ddprun 0.1) had no lengths and no HELLO. A daemon refuses a protocol-1 agent,
// whose first native message is JOIN or AUTH_HELLO, with an ERROR in protocol 1's layout
// (`0x94 | u8 code | str message`, no length), which that agent prints; a protocol-1 daemon
// answers HELLO (0x8A, its removed AUTH_OPEN) with that same layout, by which an agent knows it.
//
//   type  request (agent -> daemon)  fields
//   ----  -------------------------  ------------------------------------------------------
//   0x80  JOIN                       run_id str, node_key str, addr str, u16 store_port,
//                                    u32 local_world_size, u32 min_nodes, u32 max_nodes,
//                                    u32 max_restarts, i64 join_timeout, i64 last_call_timeout,
//                                    i64 close_timeout, i64 keep_alive_interval,
//                                    u32 keep_alive_max_attempt,
//                                    u32 max_no_progress_restarts, i32 no_progress_exit_code,
//                                    u32 straggler_factor_milli, u32 straggler_reports,
//                                    u8 exclude_straggler, u8 has_node_rank, u32 node_rank
//                                    (static rendezvous: JoinRequest::node_rank)
//   0x81  HEARTBEAT                  -
//   0x82  REPORT_FAILURE             u64 round, u64 n, n x failure
//   0x83  WORKERS_STOPPED            u64 round
//   0x84  REPORT_SUCCESS             u64 round
//   0x85  LEAVE                      reason str
//   0x87  QUERY_WAITING              - (answered with WAITING while the first round forms)
//   0x88, 0x89                       job secrets' AUTH_HELLO, AUTH_FRAME: protocol.h
//   0x8A  HELLO                      u32 protocol, u32 oldest_protocol, ddprun_version str
//   0x8B  PROGRESS                   u64 round, i64 stepping, u64 n,
//                                    n x (u32 m | u64 rank, i64 step, i64 step_time in us)
//
//   type  push (daemon -> agent)     fields
//   ----  -------------------------  ------------------------------------------------------
//   0x90  JOINED                     u64 round, u8 waiting
//   0x91  ROUND_COMPLETE             u64 round, u32 restart_count, u32 group_rank,
//                                    u32 group_world_size, u32 local_world_size,
//                                    u64 rank_offset, u64 world_size, store_addr str,
//                                    u16 store_port
//   0x92  STOP_WORKERS               u64 round, u8 reason (1 worker failed, 2 node lost,
//                                    3 node joined), detail str, u8 has_failure, [failure]
//   0x93  JOB_FINISHED               i32 exit_code, reason str, u8 has_failure, [failure],
//                                    i64 goodput stepping, i64 goodput wall, u8 no_progress
//   0x94  ERROR                      u8 code (ddp::ErrorCode, 1..12), message str
//   0x95  (a framed TCPStore reply, rendezvous/framer.h; not a push)
//   0x96  WAITING                    u32 joined, u32 min_nodes, u32 max_nodes,
//                                    i64 join_timeout_left, i64 last_call_left (-1: none)
//   0x97  (CHALLENGE of job secrets, rendezvous/protocol.h; not a push)
//   0x98  STRAGGLER                  u64 round, u64 rank, i64 step_time us, i64 median us,
//                                    u32 reports, u8 removed
//   0x99  VERSION                    the HELLO fields, the daemon's
//
//   failure := u32 n | node_key str, u32 group_rank, u32 local_rank, u32 rank, i32 exit_code,
//              i64 pid, i64 time, error_file str, message str,
//              u8 hang (0 not hung, 1 hung, 2 hung with a step), i64 step (0 unless 2),
//              last_lines, stack_head (lines := u64 n <= 40, n x str; diagnosis.h's bounds),
//              u8 no_restart, traceback str
//
// Requests get no reply except HELLO (VERSION), JOIN (JOINED or ERROR), QUERY_WAITING (WAITING)
// and a refused request (ERROR); every other push comes whenever the job changes. TCPStore
// queries may share the connection: once it has sent a native request, the daemon frames each
// TCPStore reply as push type 0x95 (rendezvous/framer.h), so pushes and replies never get
// confused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/codec.h"
#include "common/status.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

// This build's native protocol, and the oldest one it works with.
inline constexpr std::uint32_t kProtocol = 2;
inline constexpr std::uint32_t kOldestProtocol = 2;

inline constexpr std::uint8_t kFirstRequestType = 0x80;
inline constexpr std::uint8_t kHelloType = 0x8A;
inline constexpr std::uint8_t kFirstPushType = 0x90;
inline constexpr std::uint8_t kErrorType = 0x94;
inline constexpr std::uint8_t kWaitingType = 0x96;    // after 0x95, the framed store reply
inline constexpr std::uint8_t kStragglerType = 0x98;  // after 0x97, protocol.h's CHALLENGE
inline constexpr std::uint8_t kVersionType = 0x99;

// True for 0x80..0x8F: the session hands such bytes to decode_request().
inline bool is_native_request_type(std::uint8_t type) {
  return type >= kFirstRequestType && type < kFirstPushType;
}

// Checked before anything is allocated for a field.
struct WireLimits {
  std::size_t max_name_bytes = 1024;         // run id, node key, address
  std::size_t max_text_bytes = 64 << 10;     // reasons, details, error files, messages
  std::size_t max_failures = 4096;           // failures in one REPORT_FAILURE
  std::size_t max_ranks = 1 << 16;           // ranks in one PROGRESS
  std::size_t max_message_bytes = 16 << 20;  // one whole message
};

using codec::Decoded;
using codec::DecodeState;

std::string encode_request(const Request& request);
std::string encode_push(const Payload& push);

// Decode the first message of `input`. Pure; never reads past `input`. Values are not
// checked for meaning (Registry does that), only for framing and limits.
Decoded<Request> decode_request(std::string_view input, const WireLimits& limits = {});
Decoded<Payload> decode_push(std::string_view input, const WireLimits& limits = {});

// ---- the version handshake (HELLO and VERSION, drawn above) -----------------------------
struct Version {
  std::uint32_t protocol = kProtocol;
  std::uint32_t oldest = kOldestProtocol;
  std::string ddprun;  // the release, e.g. "0.2.0"
  bool operator==(const Version&) const = default;
};
Version this_version();
// Each side's protocol is at least the other's oldest.
bool compatible(const Version& agent, const Version& daemon);
// The one line an agent and a daemon that cannot work together print: both ddprun versions
// and which side to upgrade. nullopt: a protocol-1 peer (it sent no Version); `daemon_at`
// ("host:port") may be empty.
std::string skew_message(const std::optional<Version>& agent, const std::optional<Version>& daemon,
                         std::string_view daemon_at);

std::string encode_hello(const Version& agent);     // HELLO, 0x8A
std::string encode_version(const Version& daemon);  // VERSION, 0x99
Decoded<Version> decode_hello(std::string_view input, const WireLimits& limits = {});
Decoded<Version> decode_version(std::string_view input, const WireLimits& limits = {});

// Protocol 1's ERROR layout (no length): what a daemon refuses a protocol-1 agent with, and
// what a protocol-1 daemon answers HELLO with.
std::string encode_legacy_error(ErrorCode code, std::string_view message);
Decoded<ErrorEvent> decode_legacy_error(std::string_view input, const WireLimits& limits = {});

}  // namespace ddp::rendezvous::membership
