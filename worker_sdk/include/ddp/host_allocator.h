// CPU tensor memory and glibc's malloc. Batch-sized tensors (hundreds of KiB to MiBs) sit
// above glibc's mmap threshold, so by default every step maps fresh pages and unmaps them when
// the tensor dies: the page faults, not the arithmetic, then dominate a CPU training step
// (measured here: 5x fewer samples/s for the example model, and very noisy on VMs where a page
// fault is expensive). ddp::init() therefore keeps such blocks in the heap for reuse:
// M_MMAP_THRESHOLD 64 MiB and M_TRIM_THRESHOLD 256 MiB (the cost: up to that much freed
// memory stays with the process instead of going back to the OS).
//
// The user's choice wins: nothing is changed when MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES is set, or when DDP_MALLOC_TUNING=0. Torch-free;
// call on the main thread before the training threads start.
#pragma once

#include "ddp/worker_env.h"

namespace ddp {

struct HostAllocatorTuning {
  bool applied = false;
  const char* reason = "";  // why not, when not applied
};

HostAllocatorTuning tune_host_allocator(const EnvLookup& lookup);

}  // namespace ddp
