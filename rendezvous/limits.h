// Size limits of the store protocol, checked by the parser before any allocation.
// Defaults match PyTorch's libuv TCPStore server; the daemon makes them configurable.
#pragma once

#include <cstddef>

namespace ddp::rdzv {

struct Limits {
  std::size_t max_key_bytes = std::size_t{8} << 10;     // 8 KiB per key
  std::size_t max_value_bytes = std::size_t{8} << 20;   // 8 MiB per value
  std::size_t max_keys_per_query = 131072;              // CHECK, WAIT, MULTI_GET, MULTI_SET
};

}  // namespace ddp::rdzv
