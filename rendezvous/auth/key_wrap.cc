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

Result<Bytes32> public_of(const Bytes32& private_key) {
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(),
                                        private_key.size()));
  Bytes32 out{};
  std::size_t len = out.size();
  if (!key || EVP_PKEY_get_raw_public_key(key.get(), out.data(), &len) != 1 || len != out.size()) {
    return internal_error("X25519: cannot derive a public key");
  }
  return out;
}

// pad = HMAC-SHA256(X25519(mine, theirs), label | challenge)
Result<Bytes32> pad(const Bytes32& mine, const Bytes32& theirs, const Challenge& challenge) {
  Pkey own(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, mine.data(), mine.size()));
  Pkey peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, theirs.data(), theirs.size()));
  if (!own || !peer) return internal_error("X25519: bad key bytes");
  PkeyCtx ctx(EVP_PKEY_CTX_new(own.get(), nullptr));
  Bytes32 shared{};
  std::size_t len = shared.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), shared.data(), &len) != 1 || len != shared.size()) {
    // Also a low-order peer point (an all-zero shared secret is refused by OpenSSL).
    return unauthenticated("X25519 key agreement failed: a malformed public key");
  }
  std::string data(kWrapLabel);
  data.append(reinterpret_cast<const char*>(challenge.data()), challenge.size());
  return hmac_sha256(std::string_view(reinterpret_cast<const char*>(shared.data()), shared.size()),
                     data);
}

Bytes32 xor32(const Bytes32& a, const Bytes32& b) {
  Bytes32 out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = a[i] ^ b[i];
  return out;
}

}  // namespace

Result<KeyPair> generate_key_pair() {
  auto random = random_bytes32();
  if (!random) return random.status();
  KeyPair pair;
  pair.private_key = *random;
  auto pub = public_of(pair.private_key);
  if (!pub) return pub.status();
  pair.public_key = *pub;
  return pair;
}

Result<KeyWrap> wrap_job_key(const Key& job_key, const Bytes32& daemon_public,
                             const Challenge& challenge) {
  auto eph = generate_key_pair();
  if (!eph) return eph.status();
  auto p = pad(eph->private_key, daemon_public, challenge);
  if (!p) return p.status();
  return KeyWrap{eph->public_key, xor32(job_key, *p)};
}

Result<Key> unwrap_job_key(const KeyWrap& wrap, const KeyPair& daemon, const Challenge& challenge) {
  auto p = pad(daemon.private_key, wrap.agent_public, challenge);
  if (!p) return p.status();
  return xor32(wrap.wrapped, *p);
}

}  // namespace ddp::rendezvous::auth
