// Wire messages of ddprun's native rendezvous operations: pure encode/decode, no I/O.
//
// They live in the query-type range rendezvous/protocol.h reserves for ddprun (0x80..0xFF,
// which no PyTorch version uses); this library takes 0x80..0x9F: requests 0x80..0x8F,
// pushes 0x90..0x9F, the rest stays free. Framing follows TCPStore's (tcpstore.md): no
// header, no request id, a u8 type then the fields; integers raw host-order (little-endian
// on x86-64); str := u64 length | bytes. Durations are i64 milliseconds, times i64
// microseconds since the Unix epoch, booleans u8 0/1.
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
//                                    u8 exclude_straggler
//   0x81  HEARTBEAT                  -
//   0x82  REPORT_FAILURE             u64 round, u64 n, n x failure
//   0x83  WORKERS_STOPPED            u64 round
//   0x84  REPORT_SUCCESS             u64 round
//   0x85  LEAVE                      reason str
//   0x86  JOIN_AT_RANK               the JOIN fields, then u32 node_rank (static rendezvous:
//                                    JoinRequest::node_rank set; a JOIN without it is 0x80,
//                                    byte for byte as before)
//   0x87  QUERY_WAITING              - (answered with WAITING while the first round forms)
//   0x88..0x8A                       job secrets' AUTH_HELLO, AUTH_FRAME, (AUTH_OPEN): protocol.h
//   0x8B  PROGRESS                   u64 round, i64 stepping, u64 n,
//                                    n x (u64 rank, i64 step, i64 step_time in microseconds)
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
//
//   failure := node_key str, u32 group_rank, u32 local_rank, u32 rank, i32 exit_code,
//              i64 pid, i64 time, error_file str, message str,
//              u8 hang (0 not hung, 1 hung, 2 hung with a step), i64 step (0 unless 2),
//              last_lines, stack_head (lines := u64 n <= 40, n x str; diagnosis.h's bounds)
//              u8 no_restart
//
// Requests get no reply except JOIN / JOIN_AT_RANK (JOINED or ERROR), QUERY_WAITING (WAITING)
// and a refused request (ERROR); every other push comes whenever the job changes. TCPStore
// queries may share the connection: once it has sent a native request, the daemon frames each
// TCPStore reply as push type 0x95 (rendezvous/framer.h), so pushes and replies never get
// confused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

inline constexpr std::uint8_t kFirstRequestType = 0x80;
inline constexpr std::uint8_t kFirstPushType = 0x90;
inline constexpr std::uint8_t kJoinAtRankType = 0x86;  // JOIN with JoinRequest::node_rank
inline constexpr std::uint8_t kQueryWaitingType = 0x87;
inline constexpr std::uint8_t kProgressType = 0x8B;   // after the auth types 0x88..0x8A
inline constexpr std::uint8_t kWaitingType = 0x96;    // after 0x95, the framed store reply
inline constexpr std::uint8_t kStragglerType = 0x98;  // after 0x97, protocol.h's CHALLENGE

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

enum class DecodeState { kIncomplete, kError, kComplete };

template <typename T>
struct Decoded {
  DecodeState state = DecodeState::kIncomplete;
  T message{};
  std::size_t consumed = 0;  // kComplete: bytes of the input the message used
  std::size_t needed = 0;    // kIncomplete: the smallest input size that can make progress
  std::string error;         // kError: names the problem, e.g. "node_key of 5000 bytes ..."
};

std::string encode_request(const Request& request);
std::string encode_push(const Payload& push);

// Decode the first message of `input`. Pure; never reads past `input`. Values are not
// checked for meaning (Registry does that), only for framing and limits.
Decoded<Request> decode_request(std::string_view input, const WireLimits& limits = {});
Decoded<Payload> decode_push(std::string_view input, const WireLimits& limits = {});

}  // namespace ddp::rendezvous::membership
