// Registering a job key with a daemon that does not know the job yet (trust on first use),
// without sending the key in clear: the daemon has one X25519 key pair for its lifetime and
// sends its public key with every challenge; an agent sends K XOR pad, pad = HMAC-SHA256(
// X25519(agent, daemon), "ddprun key wrap v1" | challenge), with its own X25519 public key. A
// passive eavesdropper learns nothing about K; the frame's MAC (under K) proves the wrap was
// made by the same holder. It does not stop an active attacker who races the first JOIN of a
// run id or sits in the middle of it (docs/security.md, "Threat model").
//
// The agent draws a fresh X25519 pair per wrap: two scalar multiplications (~0.1 ms), paid once
// per job by each agent process, on its own host.
//
// Threading: any thread. Failure: kInternal when libcrypto refuses (never with valid input);
// kUnauthenticated for a malformed (low-order) public key.
#pragma once

#include "common/status.h"
#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {

struct KeyPair {
  Bytes32 private_key{};
  Bytes32 public_key{};
};

struct KeyWrap {
  Bytes32 agent_public{};  // the wrap's ephemeral X25519 public key
  Bytes32 wrapped{};       // K XOR pad
  bool operator==(const KeyWrap&) const = default;
};

Result<KeyPair> generate_key_pair();  // fresh random X25519 pair

// The agent side: wraps K with a fresh ephemeral pair.
Result<KeyWrap> wrap_job_key(const Key& job_key, const Bytes32& daemon_public,
                             const Challenge& challenge);
// The daemon side: one X25519 per call (the daemon unwraps once per job it learns).
Result<Key> unwrap_job_key(const KeyWrap& wrap, const KeyPair& daemon, const Challenge& challenge);

}  // namespace ddp::rendezvous::auth
