#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/byte_codec.h"
#include "rendezvous/auth/auth.h"

namespace ddp::rendezvous::auth {
namespace {
constexpr std::string_view kJobKeyLabel = "ddprun job key v1";
constexpr std::string_view kFrameLabel = "ddprun frame v1";

std::string_view view(const Bytes32& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}
}  // namespace

Mac hmac_sha256(std::string_view key, std::string_view data) {
  Mac out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
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
