// Size limits of the store protocol, checked by the parser before any allocation.
// Defaults match PyTorch's libuv TCPStore server; the daemon makes them configurable.
#pragma once

#include <cstddef>

namespace ddp::rendezvous {

struct Limits {
  std::size_t max_key_bytes = std::size_t{8} << 10;    // 8 KiB per key
  std::size_t max_value_bytes = std::size_t{8} << 20;  // 8 MiB per value
  std::size_t max_keys_per_query = 131072;             // CHECK, WAIT, MULTI_GET, MULTI_SET
  // Added by the rendezvous implementation: the whole of one request (bounds MULTI_SET,
  // whose per-field limits alone would allow terabytes) and the replies queued for a
  // client that does not read them.
  std::size_t max_request_bytes = std::size_t{64} << 20;  // 64 MiB
  std::size_t max_pending_reply_bytes = std::size_t{64} << 20;
};

}  // namespace ddp::rendezvous
