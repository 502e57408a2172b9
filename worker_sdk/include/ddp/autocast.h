// Mixed precision for the forward pass: LibTorch's autocast, scoped.
//
//   {
//     ddp::AutocastGuard autocast(ctx.device().type(), at::kBFloat16);
//     loss = torch::nn::functional::cross_entropy(model.forward(x), y);
//   }
//   loss.backward();  // parameters and their gradients stay float32
//
// Inside the guard, ops on autocast's lists (convolutions, linear layers, matmul, ...) run in
// `dtype`; others keep float32. On the CPU, LibTorch 1.13 autocasts to bfloat16 only (tested
// here; machines without AVX512-BF16 emulate it and may be slower than float32). On CUDA,
// float16 or bfloat16 (needs a CUDA LibTorch; untested here: no GPU). float16 on CUDA wants a
// gradient scaler, which the SDK does not provide; bfloat16 does not.
//
// The guard saves and restores the thread's autocast state (guards nest) and clears the cast
// cache when the outermost one ends. Autocast state is per thread: construct and destroy the
// guard on the thread that runs the forward pass.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "common/status.h"

namespace ddp {

// kInvalidArgument naming what works, when `dtype` is not autocast's for `device`.
Status check_autocast(c10::DeviceType device, c10::ScalarType dtype);

class AutocastGuard {
 public:
  // Throws std::invalid_argument with check_autocast's message when the pair is not supported.
  AutocastGuard(c10::DeviceType device, c10::ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool was_enabled_;
  c10::ScalarType previous_dtype_;
};

}  // namespace ddp
