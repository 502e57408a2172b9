// What the presence signal of an etcd job puts on the wire and in etcd (docs/etcd.md,
// "Presence: the fast path for a dead agent process"). Pure, no I/O.
//
// P/coordinator's value, the claim of the elected agent:
//     <node_key> "\n" <host:port of its presence listener>
// (only the node key when it has no listener: the others then rely on its lease alone).
//
// A presence connection, agent -> coordinating agent, carries exactly:
//     "ddprun-presence\n" <run_id> "\n" <node_key> "\n" <lease id, decimal> "\n"
//     <token> "\n\n"                                                          (hello)
//     "bye\n"                                                 (optional, then close)
// and back only a bye, when the coordinator closes on purpose (it exits, or the hello was
// not one it accepts). The connection closing (EOF or reset) without a bye first means the
// process at the other end is gone: the kernel closed its socket.
//
// The token: each agent's own secret, >= 128 random bits as hex (kMinTokenDigits or more),
// drawn once and written to P/presence/<node_key> under its lease in the txn that creates its
// node key. A hello is worth something only when its token is the one etcd holds for its
// node: the coordinator refuses a hello whose token etcd contradicts, and revokes on a close
// only while etcd holds the hello's token and the node key still carries the hello's lease.
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
  std::string token;
};
inline constexpr std::string_view kHelloEnd = "\n\n";
inline constexpr std::string_view kBye = "bye\n";
inline constexpr std::size_t kMaxHello = 4096;      // the server reads no more before the end mark
inline constexpr std::size_t kMinTokenDigits = 32;  // 128 bits
std::string encode_hello(const PresenceHello& hello);
// `text` up to and including kHelloEnd. kProtocol naming what is wrong.
Result<PresenceHello> decode_hello(std::string_view text);

// What etcd holds for a hello's node when the coordinator judges it, read in one txn: the
// lease carrying P/nodes/<node_key> (0: no such key) and the token in P/presence/<node_key>
// (none: no such key).
struct PresenceRecord {
  std::int64_t node_lease = 0;
  std::optional<std::string> token;
};
// Equal tokens, in time that depends on the lengths only (not on where they differ).
bool same_token(std::string_view a, std::string_view b);
// The hello is refused at once: etcd holds a token for its node and it is another one. (No
// token yet is no verdict: the node has not joined; the close is judged on its own.)
bool token_mismatch(const PresenceHello& hello, const PresenceRecord& record);
// A close without bye revokes the hello's lease only when etcd holds the hello's token and
// the node key still carries that lease (a node that left, joined again, or was never this
// hello's sender is not touched).
bool revokes_on_close(const PresenceHello& hello, const PresenceRecord& record);

}  // namespace ddp::agent
