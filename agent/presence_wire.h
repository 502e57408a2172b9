// What the presence signal of an etcd job puts on the wire and in etcd (docs/etcd.md,
// "Presence: the fast path for a dead agent process"). Pure, no I/O.
//
// P/coordinator's value, the claim of the elected agent:
//     <node_key> "\n" <host:port of its presence listener>
// (only the node key when it has no listener: the others then rely on its lease alone).
//
// A presence connection, agent -> coordinating agent, carries exactly:
//     "ddprun-presence\n" <run_id> "\n" <node_key> "\n" <lease id, decimal> "\n\n"   (hello)
//     "bye\n"                                                        (optional, then close)
// and back only a bye, when the coordinator closes on purpose (it exits, or the hello was
// not one it accepts). The connection closing (EOF or reset) without a bye first means the
// process at the other end is gone: the kernel closed its socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "etcd/endpoints.h"

namespace ddp::agent {

struct CoordinatorClaim {
  std::string node_key;
  std::optional<etcd::Endpoint> presence;  // none: no fast path to this coordinator
};
std::string encode_claim(const CoordinatorClaim& claim);
// Never fails: a value without a valid endpoint is a claim without presence.
CoordinatorClaim decode_claim(std::string_view value);

struct PresenceHello {
  std::string run_id;
  std::string node_key;
  std::int64_t lease = 0;
};
inline constexpr std::string_view kHelloEnd = "\n\n";
inline constexpr std::string_view kBye = "bye\n";
inline constexpr std::size_t kMaxHello = 4096;  // the server reads no more before the end mark
std::string encode_hello(const PresenceHello& hello);
// `text` up to and including kHelloEnd. kProtocol naming what is wrong.
Result<PresenceHello> decode_hello(std::string_view text);

}  // namespace ddp::agent
