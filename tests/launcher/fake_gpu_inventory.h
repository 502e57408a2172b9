// A GpuInventory with a fixed answer, for the tests that parse a command line (launcher,
// cluster, fanout).
#pragma once

#include "launcher/gpu_inventory.h"

namespace ddp::launcher {

class FakeGpuInventory final : public GpuInventory {
 public:
  explicit FakeGpuInventory(int count) : count_(count) {}
  Result<int> physical_count() const override { return count_; }
  std::string source() const override { return "fake"; }

 private:
  int count_;
};

}  // namespace ddp::launcher
