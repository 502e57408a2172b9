// The wall clock as milliseconds since the Unix epoch (system_clock), for values that cross
// machines (e.g. the stamp of an authenticated open). Never for timeouts: use steady_clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace ddp {

inline std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace ddp
