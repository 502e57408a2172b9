#include "etcd/codec.h"

#include <array>

#include "common/text.h"

namespace ddp::etcd {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> decode_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i)
    t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return t;
}
constexpr auto kDecode = decode_table();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t n = (static_cast<unsigned char>(bytes[i]) << 16) |
                      (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                      static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0)
    return protocol_error("base64 of length " + std::to_string(text.size()));
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    int pad = 0;
    std::uint32_t n = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      char c = text[i + j];
      int v = 0;
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
      } else if (pad > 0 || (v = kDecode[static_cast<unsigned char>(c)]) < 0) {
        return protocol_error("bad base64 character at " + std::to_string(i + j));
      }
      n = (n << 6) | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>((n >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

Result<std::int64_t> int_field(const Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return std::int64_t{0};
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_string()) {
    const auto v = parse_number<std::int64_t>(it->get_ref<const std::string&>());
    if (v) return *v;
  }
  return protocol_error(std::string("etcd field '") + field + "' is not an integer: " + it->dump());
}

Result<std::string> bytes_field(const Json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return protocol_error(std::string("etcd field '") + field + "' is not a string");
  }
  auto decoded = base64_decode(it->get_ref<const std::string&>());
  if (!decoded) {
    return protocol_error(std::string("etcd field '") + field + "': " + decoded.status().message());
  }
  return decoded;
}

Result<KeyValue> decode_key_value(const Json& kv) {
  if (!kv.is_object()) return protocol_error("etcd key-value is not an object");
  KeyValue out;
  auto key = bytes_field(kv, "key");
  auto value = bytes_field(kv, "value");
  auto create = int_field(kv, "create_revision");
  auto mod = int_field(kv, "mod_revision");
  auto version = int_field(kv, "version");
  auto lease = int_field(kv, "lease");
  if (!key) return key.status();
  if (!value) return value.status();
  for (auto* r : {&create, &mod, &version, &lease}) {
    if (!*r) return r->status();
  }
  out.key = std::move(key).value();
  out.value = std::move(value).value();
  out.create_revision = *create;
  out.mod_revision = *mod;
  out.version = *version;
  out.lease = *lease;
  return out;
}

}  // namespace ddp::etcd
