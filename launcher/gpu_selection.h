// Which GPUs ddprun's workers use: --nproc-per-node gpu|cpu|auto and --gpu-ids, decided from a
// GpuInventory and the CUDA_VISIBLE_DEVICES ddprun inherited. Pure logic over the seam.
//
// CUDA_VISIBLE_DEVICES is read the way CUDA reads it: a comma-separated list of physical
// indices (or GPU-/MIG- UUIDs); the list ends at the first entry that is not a valid, unused
// index on this machine; set but empty hides every GPU. --gpu-ids index into that visible set,
// as CUDA device numbers would: with CUDA_VISIBLE_DEVICES=4,5,6,7, --gpu-ids 1,3 selects
// physical GPUs 5 and 7, and the workers get CUDA_VISIBLE_DEVICES=5,7. Without an inherited
// CUDA_VISIBLE_DEVICES the ids are the physical ones, unchanged.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/gpu_inventory.h"

namespace ddp::launcher {

// The GPUs a CUDA program started here would see, in CUDA device order: each entry is the
// physical index ("5") or the UUID token ("GPU-8a1b...") taken from CUDA_VISIBLE_DEVICES.
std::vector<std::string> visible_gpus(int physical_count,
                                      const std::optional<std::string>& cuda_visible_devices);

// The worker count for --nproc-per-node gpu (visible GPUs; an error naming the fix when there
// are none), cpu (cpu_count) or auto (visible GPUs if any, else cpu_count).
Result<int> count_for_device_word(std::string_view word, const GpuInventory& inventory,
                                  const std::optional<std::string>& cuda_visible_devices,
                                  int cpu_count);

// --gpu-ids: parses and checks the selection (junk, negatives, duplicates, ids beyond the
// visible GPUs) and returns the physical ids to expose to the workers, in the given order.
// With an inherited CUDA_VISIBLE_DEVICES holding UUIDs the ids cannot be mapped to numbers:
// that is an error naming the fix.
Result<std::vector<int>> select_gpu_ids(std::string_view spec, const GpuInventory& inventory,
                                        const std::optional<std::string>& cuda_visible_devices);

}  // namespace ddp::launcher
