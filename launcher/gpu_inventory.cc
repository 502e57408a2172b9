#include "launcher/gpu_inventory.h"

#include <dlfcn.h>

#include <optional>
#include <system_error>

namespace ddp::launcher {
namespace {

// The three NVML entry points ddprun needs; nvmlReturn_t is an int-sized enum, 0 = success.
using NvmlInit = int (*)();
using NvmlDeviceGetCount = int (*)(unsigned int*);
using NvmlShutdown = int (*)();

// Asks NVML for the device count. Returns nullopt when the library is missing or any call
// fails (no driver loaded, permission), so the caller can fall back to /proc.
std::optional<int> nvml_device_count() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  auto init = reinterpret_cast<NvmlInit>(dlsym(lib, "nvmlInit_v2"));
  auto count_fn = reinterpret_cast<NvmlDeviceGetCount>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(dlsym(lib, "nvmlShutdown"));
  std::optional<int> result;
  if (init != nullptr && count_fn != nullptr && init() == 0) {
    unsigned int count = 0;
    if (count_fn(&count) == 0) result = static_cast<int>(count);
    if (shutdown != nullptr) shutdown();
  }
  dlclose(lib);
  return result;
}

class SystemGpuInventory final : public GpuInventory {
 public:
  Result<int> physical_count() const override {
    if (auto count = nvml_device_count()) {
      source_ = "NVML";
      return *count;
    }
    source_ = proc_.source();
    return proc_.physical_count();
  }
  std::string source() const override { return source_; }

 private:
  ProcGpuInventory proc_{kDefaultProcNvidia};
  mutable std::string source_ = "NVML or /proc/driver/nvidia/gpus";
};

}  // namespace

Result<int> ProcGpuInventory::physical_count() const {
  std::error_code ec;
  auto gpus = root_ / "gpus";
  if (!std::filesystem::exists(gpus, ec)) return 0;
  std::filesystem::directory_iterator it(gpus, ec);
  if (ec) return io_error("cannot list " + gpus.string() + ": " + ec.message());
  int count = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) ++count;
  }
  if (ec) return io_error("cannot list " + gpus.string() + ": " + ec.message());
  return count;
}

std::string ProcGpuInventory::source() const { return (root_ / "gpus").string(); }

std::unique_ptr<GpuInventory> make_system_gpu_inventory(
    const std::map<std::string, std::string>& env) {
  if (auto it = env.find(kProcNvidiaEnv); it != env.end() && !it->second.empty()) {
    return std::make_unique<ProcGpuInventory>(it->second);
  }
  return std::make_unique<SystemGpuInventory>();
}

}  // namespace ddp::launcher
