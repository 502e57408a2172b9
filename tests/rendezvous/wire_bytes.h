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

}  // namespace ddp::rendezvous::test
