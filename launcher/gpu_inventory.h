// GPU discovery behind a seam, with no CUDA at build time.
//
// GpuInventory answers one question: how many physical NVIDIA GPUs does this machine have?
// The system inventory asks NVML (libnvidia-ml.so.1 opened with dlopen at run time, each time
// a count is asked, never before) and falls back to counting /proc/driver/nvidia/gpus/*
// entries when NVML is absent or fails. Which of those GPUs a program may use
// (CUDA_VISIBLE_DEVICES) is decided in launcher/gpu_selection.h, not here.
//
// Test seam: when DDPRUN_PROC_NVIDIA is set in the environment, the system inventory skips
// NVML and counts DDPRUN_PROC_NVIDIA/gpus/* instead of /proc/driver/nvidia/gpus/*, so tests
// can fake a machine with, say, 8 GPUs by creating gpus/0000:01:00.0/ ... directories.
//
// Implementations are used from the launcher's single thread.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace ddp::launcher {

class GpuInventory {
 public:
  virtual ~GpuInventory() = default;
  // Physical GPUs on this machine: 0 when there is no driver or no GPU. kIo when a source
  // exists but cannot be read.
  virtual Result<int> physical_count() const = 0;
  // Where the answer comes from, for messages ("NVML", "/proc/driver/nvidia/gpus", "fake").
  virtual std::string source() const = 0;
};

// Counts the entries of <root>/gpus (one directory per GPU, named by PCI address).
// A missing root or gpus directory means 0 GPUs.
class ProcGpuInventory final : public GpuInventory {
 public:
  explicit ProcGpuInventory(std::filesystem::path root) : root_(std::move(root)) {}
  Result<int> physical_count() const override;
  std::string source() const override;

 private:
  std::filesystem::path root_;
};

inline constexpr const char* kProcNvidiaEnv = "DDPRUN_PROC_NVIDIA";
inline constexpr const char* kDefaultProcNvidia = "/proc/driver/nvidia";

// The inventory ddprun uses: DDPRUN_PROC_NVIDIA's ProcGpuInventory when that variable is set
// in `env`, else NVML with the /proc fallback.
std::unique_ptr<GpuInventory> make_system_gpu_inventory(
    const std::map<std::string, std::string>& env);

}  // namespace ddp::launcher
