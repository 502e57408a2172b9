// The one byte codec of ddprun's wire formats (PyTorch's TCPStore protocol and the native
// rendezvous messages): integers as raw host-order bytes, which is what PyTorch's TCPStore
// sends and what both of ours draw (little-endian; other byte orders are refused at compile
// time). Pure and header-only.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace ddp::bytes {

static_assert(std::endian::native == std::endian::little,
              "TCPStore's wire format is the sender's raw integers: ddprun needs little-endian");

// Appends the bytes of `v`.
template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.append(raw, sizeof(T));
}

// Reads a T at `pos` and advances past it; false (nothing read) when `in` is too short.
template <typename T>
bool get(std::string_view in, std::size_t& pos, T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (pos > in.size() || in.size() - pos < sizeof(T)) return false;
  std::memcpy(&v, in.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

}  // namespace ddp::bytes
