#include "ddp/host_allocator.h"

#include <malloc.h>

namespace ddp {
namespace {

constexpr int kMmapThreshold = 64 << 20;
constexpr int kTrimThreshold = 256 << 20;

}  // namespace

HostAllocatorTuning tune_host_allocator(const EnvLookup& lookup) {
  if (auto off = lookup("DDP_MALLOC_TUNING"); off && *off == "0") {
    return {false, "DDP_MALLOC_TUNING=0"};
  }
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    if (lookup(name)) return {false, name};
  }
  if (::mallopt(M_MMAP_THRESHOLD, kMmapThreshold) != 1 ||
      ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) != 1) {
    return {false, "mallopt refused"};
  }
  return {true, ""};
}

}  // namespace ddp
