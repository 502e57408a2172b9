// A stand-in for libnvidia-ml.so.1 with the three entry points ddprun opens at run time, so the
// NVML path of launcher/gpu_inventory.cc runs for real on a machine without NVIDIA drivers.
// FAKE_NVML_COUNT sets the device count; FAKE_NVML_FAIL=1 makes nvmlInit_v2 fail (as with no
// driver loaded), which must send ddprun to its /proc fallback.
#include <cstdlib>

extern "C" {

int nvmlInit_v2() {
  const char* fail = std::getenv("FAKE_NVML_FAIL");
  return fail != nullptr && fail[0] == '1' ? 9 : 0;  // 9 = NVML_ERROR_DRIVER_NOT_LOADED
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  const char* text = std::getenv("FAKE_NVML_COUNT");
  *count = text == nullptr ? 0u : static_cast<unsigned int>(std::strtoul(text, nullptr, 10));
  return 0;
}

int nvmlShutdown() { return 0; }

}  // extern "C"
