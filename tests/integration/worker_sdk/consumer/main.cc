// Uses the installed SDK's headers and library: environment parsing and the sampler (which
// runs LibTorch's randperm), so both the include paths and the link line are exercised.
#include <cstdio>

#include "ddp/sampler.h"
#include "ddp/worker_env.h"

int main() {
  auto env = ddp::parse_worker_env(ddp::process_env());
  if (!env) {
    std::printf("env error: %s\n", env.status().message().c_str());
  }
  ddp::DistributedSampler sampler({.dataset_size = 10, .num_replicas = 2, .rank = 1, .seed = 3});
  for (auto i : sampler.indices()) std::printf("%lld ", static_cast<long long>(i));
  std::printf("\n");
  return 0;
}
