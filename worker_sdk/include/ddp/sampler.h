// Index sampler with exactly the semantics of torch.utils.data.DistributedSampler:
// - shuffle: torch.randperm(size) drawn from a CPU generator seeded with seed + epoch
//   (so every rank computes the same permutation), else 0..size-1;
// - drop_last false: the list is padded by repeating it from the start up to
//   ceil(size / replicas) * replicas; drop_last true: trimmed to floor(size / replicas) *
//   replicas (when size is not divisible);
// - rank r takes positions r, r + replicas, r + 2 * replicas, ...
// Plain value type; not thread-safe (one per data loader).
#pragma once

#include <cstdint>
#include <vector>

namespace ddp {

struct SamplerOptions {
  std::int64_t dataset_size = 0;
  int num_replicas = 1;
  int rank = 0;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // Throws std::invalid_argument for a negative size, num_replicas < 1 or rank outside
  // [0, num_replicas).
  explicit DistributedSampler(SamplerOptions options);

  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::int64_t epoch() const { return epoch_; }

  // Number of indices this rank gets per epoch (the same on every rank).
  std::int64_t num_samples() const { return num_samples_; }
  std::int64_t total_size() const { return num_samples_ * options_.num_replicas; }

  // This rank's indices for the current epoch.
  std::vector<std::int64_t> indices() const;

 private:
  SamplerOptions options_;
  std::int64_t epoch_ = 0;
  std::int64_t num_samples_ = 0;
};

}  // namespace ddp
