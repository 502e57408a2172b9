// Registering a job key with a daemon that does not know the job yet (trust on first use),
// without sending the key in clear: the daemon has one X25519 key pair for its lifetime and
// sends its public key with every challenge; an agent sends K XOR pad, pad = HMAC-SHA256(
// X25519(agent, daemon), "ddprun key wrap v1" | challenge), with its own X25519 public key. A
// passive eavesdropper learns nothing about K; the frame's MAC (under K) proves the wrap was
// made by the same holder. It does not stop an active attacker who races the first JOIN of a
// run id or sits in the middle of it (docs/security.md, "Threat model").
//
// The agent's X25519 pair is ephemeral per process, not per connection (KeyWrapper): a process
// draws one pair when it first wraps and keeps, per daemon public key, the X25519 shared secret;
// every later wrap is one HMAC. The pad stays unique per connection because the challenge is
// (32 random bytes the daemon draws per connection), so two wraps never share a pad. What a
// per-connection pair would add is only that one wrapped K stays safe if another connection's
// shared secret leaks; the shared secret lives only in the agent process, which holds the job
// secret itself. Cost: one scalar multiplication per process (the pair) and one per daemon (the
// shared secret), instead of three per connection; the wire format is unchanged.
//
// Threading: any thread (KeyWrapper locks its cache). Failure: kInternal when libcrypto
// refuses (never with valid input); kUnauthenticated for a malformed (low-order) public key.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {

struct KeyPair {
  Bytes32 private_key{};
  Bytes32 public_key{};
};

struct KeyWrap {
  Bytes32 agent_public{};  // the agent process's ephemeral X25519 public key
  Bytes32 wrapped{};       // K XOR pad
  bool operator==(const KeyWrap&) const = default;
};

Result<KeyPair> generate_key_pair();  // fresh random X25519 pair

// One ephemeral X25519 pair and the shared secrets it agreed with daemons, keyed by the
// daemon's public key (at most kMaxDaemons; beyond that the cache starts over, so a daemon
// that changes its key per connection costs one scalar multiplication per wrap, never memory).
class KeyWrapper {
 public:
  static constexpr std::size_t kMaxDaemons = 64;

  static Result<std::unique_ptr<KeyWrapper>> create();  // draws the pair
  ~KeyWrapper();
  KeyWrapper(const KeyWrapper&) = delete;
  KeyWrapper& operator=(const KeyWrapper&) = delete;

  Result<KeyWrap> wrap(const Key& job_key, const Bytes32& daemon_public,
                       const Challenge& challenge);
  const Bytes32& public_key() const { return public_; }
  std::size_t daemons_known() const;  // shared secrets held (for tests)

 private:
  struct Impl;
  explicit KeyWrapper(std::unique_ptr<Impl> impl, const Bytes32& public_key);

  std::unique_ptr<Impl> impl_;  // the imported private key (EVP_PKEY)
  Bytes32 public_;
  mutable std::mutex mu_;
  std::map<Bytes32, Bytes32> shared_;  // daemon public key -> X25519 shared secret
};

// The agent side: wraps with this process's one KeyWrapper (created on first use).
Result<KeyWrap> wrap_job_key(const Key& job_key, const Bytes32& daemon_public,
                             const Challenge& challenge);
// The daemon side: one X25519 per call (the daemon unwraps once per job it learns).
Result<Key> unwrap_job_key(const KeyWrap& wrap, const KeyPair& daemon, const Challenge& challenge);

}  // namespace ddp::rendezvous::auth
