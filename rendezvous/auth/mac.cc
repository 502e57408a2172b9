#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <cstring>

#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {
namespace {
constexpr std::string_view kJobKeyLabel = "ddprun job key v1";
constexpr std::string_view kFrameLabel = "ddprun frame v1";

std::string_view view(const Bytes32& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// An HMAC-SHA256 context with its digest set and no key, made once: each call duplicates it
// and keys the copy. OpenSSL's one-shot HMAC() fetches the implementation and the digest on
// every call, and keying a fresh EVP_MAC_CTX with a "digest" parameter fetches the digest
// again; both were most of a frame's cost. Thread-safe: the template is only ever read.
const EVP_MAC_CTX* hmac_template() {
  static EVP_MAC_CTX* const ctx = [] {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* c = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
    EVP_MAC_free(mac);  // the context holds its own reference
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (c != nullptr && EVP_MAC_CTX_set_params(c, params) != 1) {
      EVP_MAC_CTX_free(c);
      c = nullptr;
    }
    return c;
  }();
  return ctx;
}

}  // namespace

Mac hmac_sha256(std::string_view key, std::string_view data) {
  Mac out{};
  const EVP_MAC_CTX* tmpl = hmac_template();
  EVP_MAC_CTX* ctx = tmpl != nullptr ? EVP_MAC_CTX_dup(tmpl) : nullptr;
  std::size_t len = 0;
  // A failure leaves `out` zero, which no verification accepts (the expected MAC is computed
  // the same way only on success paths of libcrypto; a broken libcrypto refuses everything).
  if (ctx != nullptr &&
      EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), nullptr) ==
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

MacKey::MacKey(std::string_view key) {
  const EVP_MAC_CTX* tmpl = hmac_template();
  ctx_ = tmpl != nullptr ? EVP_MAC_CTX_dup(tmpl) : nullptr;
  if (ctx_ != nullptr && EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()),
                                      key.size(), nullptr) != 1) {
    EVP_MAC_CTX_free(ctx_);
    ctx_ = nullptr;
  }
}

MacKey::~MacKey() { EVP_MAC_CTX_free(ctx_); }

MacKey::MacKey(MacKey&& other) noexcept : ctx_(other.ctx_) { other.ctx_ = nullptr; }

MacKey& MacKey::operator=(MacKey&& other) noexcept {
  if (this != &other) {
    EVP_MAC_CTX_free(ctx_);
    ctx_ = other.ctx_;
    other.ctx_ = nullptr;
  }
  return *this;
}

Mac MacKey::mac(std::initializer_list<std::string_view> parts) {
  Mac out{};
  if (ctx_ == nullptr) return out;
  // A null key restarts from the key schedule kept by the context (OpenSSL's HMAC).
  if (EVP_MAC_init(ctx_, nullptr, 0, nullptr) != 1) return out;
  for (std::string_view part : parts) {
    if (EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(part.data()), part.size()) !=
        1) {
      return Mac{};
    }
  }
  std::size_t len = 0;
  if (EVP_MAC_final(ctx_, out.data(), &len, out.size()) != 1) return Mac{};
  return out;
}

Mac frame_mac(MacKey& key, const Challenge& challenge, std::uint64_t counter,
              std::string_view run_id, std::string_view covered) {
  char numbers[16];
  const std::uint64_t run_id_size = run_id.size();
  std::memcpy(numbers, &counter, 8);
  std::memcpy(numbers + 8, &run_id_size, 8);
  return key.mac({kFrameLabel, view(challenge), std::string_view(numbers, 16), run_id, covered});
}

Mac frame_mac(const Key& key, const Challenge& challenge, std::uint64_t counter,
              std::string_view run_id, std::string_view covered) {
  MacKey ready(key);
  return frame_mac(ready, challenge, counter, run_id, covered);
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
