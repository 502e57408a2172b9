#include "ddp/autocast.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace ddp {

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
  if (device_ == c10::kCPU) {
    was_enabled_ = at::autocast::is_cpu_enabled();
    previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    was_enabled_ = at::autocast::is_enabled();
    previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (device_ == c10::kCPU) {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  } else {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
  }
}

}  // namespace ddp
