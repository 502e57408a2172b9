// Hand-written wire bytes for the protocol tests, built independently of protocol.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddp::rendezvous::test {

inline std::string le(std::uint64_t v, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}
inline std::string u64(std::uint64_t v) { return le(v, 8); }
inline std::string u32(std::uint32_t v) { return le(v, 4); }
inline std::string byte(std::uint8_t v) { return std::string(1, static_cast<char>(v)); }
// u64 length + bytes
inline std::string str(std::string_view s) { return u64(s.size()) + std::string(s); }

// ---- native protocol 2 (rendezvous/membership/wire.h) ----------------------------------
// u32 n | fields: a record, such as a failure inside a REPORT_FAILURE.
inline std::string record(std::string_view fields) {
  return u32(static_cast<std::uint32_t>(fields.size())) + std::string(fields);
}
// u8 type | u32 n | fields: one native message.
inline std::string framed(std::uint8_t type, std::string_view fields) {
  return byte(type) + record(fields);
}
// HELLO (0x8A: u32 protocol, u32 oldest_protocol, str ddprun_version), which an agent sends
// first on every native connection; by default protocol 2's.
inline std::string hello(std::uint32_t protocol = 2, std::uint32_t oldest = 2,
                         std::string_view release = "0.2.0") {
  return framed(0x8A, u32(protocol) + u32(oldest) + str(release));
}

}  // namespace ddp::rendezvous::test
