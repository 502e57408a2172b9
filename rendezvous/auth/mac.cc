#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/byte_codec.h"
#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {
namespace {
constexpr std::string_view kJobKeyLabel = "ddprun job key v1";
constexpr std::string_view kFrameLabel = "ddprun frame v1";

std::string_view view(const Bytes32& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// The HMAC implementation, fetched once: OpenSSL's one-shot HMAC() fetches it (and the digest)
// on every call, which was most of a frame's cost. Thread-safe (a fetched EVP_MAC is shared).
EVP_MAC* hmac_impl() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

}  // namespace

Mac hmac_sha256(std::string_view key, std::string_view data) {
  Mac out{};
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(hmac_impl());
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  std::size_t len = 0;
  // A failure leaves `out` zero, which no verification accepts (the expected MAC is computed
  // the same way only on success paths of libcrypto; a broken libcrypto refuses everything).
  if (ctx != nullptr &&
      EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) ==
          1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1) {
    EVP_MAC_final(ctx, out.data(), &len, out.size());
  }
  EVP_MAC_CTX_free(ctx);
  return out;
}

bool same_mac(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Key job_key(std::string_view secret, std::string_view run_id) {
  std::string data(kJobKeyLabel);
  data.push_back('\0');
  data.append(run_id);
  return hmac_sha256(secret, data);
}

Mac frame_mac(const Key& key, const Challenge& challenge, std::uint64_t counter,
              std::string_view run_id, std::string_view covered) {
  std::string data;
  data.reserve(kFrameLabel.size() + 48 + run_id.size() + covered.size());
  data.append(kFrameLabel);
  data.append(view(challenge));
  bytes::put<std::uint64_t>(data, counter);
  bytes::put<std::uint64_t>(data, run_id.size());
  data.append(run_id);
  data.append(covered);
  return hmac_sha256(view(key), data);
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace ddp::rendezvous::auth
