#include "ddp/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randperm.h>

#include <stdexcept>
#include <string>

namespace ddp {

DistributedSampler::DistributedSampler(SamplerOptions options) : options_(options) {
  if (options_.dataset_size < 0) {
    throw std::invalid_argument("DistributedSampler: dataset_size must be >= 0, got " +
                                std::to_string(options_.dataset_size));
  }
  if (options_.num_replicas < 1) {
    throw std::invalid_argument("DistributedSampler: num_replicas must be >= 1, got " +
                                std::to_string(options_.num_replicas));
  }
  if (options_.rank < 0 || options_.rank >= options_.num_replicas) {
    throw std::invalid_argument("DistributedSampler: rank " + std::to_string(options_.rank) +
                                " is outside [0, " + std::to_string(options_.num_replicas) + ")");
  }
  const std::int64_t n = options_.dataset_size;
  const std::int64_t r = options_.num_replicas;
  if (options_.drop_last && n % r != 0) {
    num_samples_ = n / r;  // the same as ceil((n - r) / r) for this case in PyTorch
  } else {
    num_samples_ = (n + r - 1) / r;
  }
}

std::vector<std::int64_t> DistributedSampler::indices() const {
  const std::int64_t n = options_.dataset_size;
  std::vector<std::int64_t> order;
  order.reserve(static_cast<std::size_t>(n));
  if (options_.shuffle) {
    // torch.Generator().manual_seed(seed + epoch) followed by torch.randperm(n, generator=g).
    at::Generator gen =
        at::detail::createCPUGenerator(options_.seed + static_cast<std::uint64_t>(epoch_));
    at::Tensor perm = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
    const std::int64_t* data = perm.data_ptr<std::int64_t>();
    order.assign(data, data + n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) order.push_back(i);
  }
  const std::int64_t total = total_size();
  if (static_cast<std::int64_t>(order.size()) < total && n > 0) {
    // Repeat the list from the start until it reaches total (may wrap several times).
    std::size_t base = order.size();
    for (std::size_t i = 0; static_cast<std::int64_t>(order.size()) < total; ++i) {
      order.push_back(order[i % base]);
    }
  } else {
    order.resize(static_cast<std::size_t>(total));
  }
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(num_samples_));
  for (std::int64_t i = options_.rank; i < total; i += options_.num_replicas) {
    mine.push_back(order[static_cast<std::size_t>(i)]);
  }
  return mine;
}

}  // namespace ddp
