#include "rendezvous/auth/key_wrap.h"

#include <openssl/evp.h>

#include <memory>

namespace ddp::rendezvous::auth {
namespace {
constexpr std::string_view kWrapLabel = "ddprun key wrap v1";

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, CtxFree>;

// Imports a raw private key; OpenSSL computes its public key on import (one scalar
// multiplication), which `public_key` receives.
Result<Pkey> import_private(const Bytes32& private_key, Bytes32& public_key) {
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(),
                                        private_key.size()));
  std::size_t len = public_key.size();
  if (!key || EVP_PKEY_get_raw_public_key(key.get(), public_key.data(), &len) != 1 ||
      len != public_key.size()) {
    return internal_error("X25519: cannot derive a public key");
  }
  return key;
}

// X25519(own, theirs): one scalar multiplication.
Result<Bytes32> shared_secret(EVP_PKEY* own, const Bytes32& theirs) {
  Pkey peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, theirs.data(), theirs.size()));
  if (!peer) return internal_error("X25519: bad key bytes");
  PkeyCtx ctx(EVP_PKEY_CTX_new(own, nullptr));
  Bytes32 shared{};
  std::size_t len = shared.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), shared.data(), &len) != 1 || len != shared.size()) {
    // Also a low-order peer point (an all-zero shared secret is refused by OpenSSL).
    return unauthenticated("X25519 key agreement failed: a malformed public key");
  }
  return shared;
}

// pad = HMAC-SHA256(shared, label | challenge) XOR'd into the key.
Bytes32 xor_pad(const Bytes32& shared, const Challenge& challenge, const Bytes32& key) {
  std::string data(kWrapLabel);
  data.append(reinterpret_cast<const char*>(challenge.data()), challenge.size());
  const Bytes32 pad = hmac_sha256(
      std::string_view(reinterpret_cast<const char*>(shared.data()), shared.size()), data);
  Bytes32 out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = key[i] ^ pad[i];
  return out;
}

}  // namespace

Result<KeyPair> generate_key_pair() {
  auto random = random_bytes32();
  if (!random) return random.status();
  KeyPair pair;
  pair.private_key = *random;
  auto key = import_private(pair.private_key, pair.public_key);
  if (!key) return key.status();
  return pair;
}

Result<KeyWrap> wrap_job_key(const Key& job_key, const Bytes32& daemon_public,
                             const Challenge& challenge) {
  auto random = random_bytes32();
  if (!random) return random.status();
  KeyWrap out;
  auto own = import_private(*random, out.agent_public);
  if (!own) return own.status();
  auto shared = shared_secret(own->get(), daemon_public);
  if (!shared) return shared.status();
  out.wrapped = xor_pad(*shared, challenge, job_key);
  return out;
}

Result<Key> unwrap_job_key(const KeyWrap& wrap, const KeyPair& daemon, const Challenge& challenge) {
  Bytes32 public_key{};
  auto own = import_private(daemon.private_key, public_key);
  if (!own) return own.status();
  auto shared = shared_secret(own->get(), wrap.agent_public);
  if (!shared) return shared.status();
  return xor_pad(*shared, challenge, wrap.wrapped);
}

}  // namespace ddp::rendezvous::auth
