#include "ddp/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>

namespace ddp {
namespace {

// LibTorch >= 2.4 takes the device type; its per-device calls of before are deprecated there.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool enabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
void set_enabled(c10::DeviceType device, bool on) {
  at::autocast::set_autocast_enabled(device, on);
}
c10::ScalarType dtype_of(c10::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}
void set_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}
#else
bool enabled(c10::DeviceType device) {
  return device == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_enabled(c10::DeviceType device, bool on) {
  device == c10::kCPU ? at::autocast::set_cpu_enabled(on) : at::autocast::set_enabled(on);
}
c10::ScalarType dtype_of(c10::DeviceType device) {
  return device == c10::kCPU ? at::autocast::get_autocast_cpu_dtype()
                             : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  device == c10::kCPU ? at::autocast::set_autocast_cpu_dtype(dtype)
                      : at::autocast::set_autocast_gpu_dtype(dtype);
}
#endif

}  // namespace

Status check_autocast(c10::DeviceType device, c10::ScalarType dtype) {
  if (device == c10::kCPU) {
    if (dtype == c10::kBFloat16) return Status::ok();
    return invalid_argument(std::string("autocast on the CPU supports bfloat16 only, not ") +
                            c10::toString(dtype));
  }
  if (device == c10::kCUDA) {
    if (dtype == c10::kBFloat16 || dtype == c10::kHalf) return Status::ok();
    return invalid_argument(std::string("autocast on CUDA supports float16 and bfloat16, not ") +
                            c10::toString(dtype));
  }
  return invalid_argument(std::string("no autocast for device type ") +
                          c10::DeviceTypeName(device));
}

AutocastGuard::AutocastGuard(c10::DeviceType device, c10::ScalarType dtype) : device_(device) {
  Status ok = check_autocast(device, dtype);
  if (!ok) throw std::invalid_argument(ok.message());
  was_enabled_ = enabled(device_);
  previous_dtype_ = dtype_of(device_);
  set_enabled(device_, true);
  set_dtype(device_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_, was_enabled_);
  set_dtype(device_, previous_dtype_);
}

}  // namespace ddp
