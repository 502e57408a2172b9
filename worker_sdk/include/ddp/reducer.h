// Gradient averaging for data-parallel training, the engine behind DistributedDataParallel.
//
// Parameters are grouped into buckets of about `bucket_cap_bytes`, in reverse registration
// order (gradients of the last layers are ready first). A post hook on each parameter's
// gradient accumulator copies the accumulated .grad into its bucket; when a bucket is full it
// is divided by the world size and all-reduced asynchronously while backward continues.
// Buckets are launched strictly in index order on every rank (collectives must match).
// A small CPU bucket (world size x bucket bytes <= gather_max_bytes) is reduced by an
// all-gather and a local sum in rank order instead of an all-reduce: one pass around the ring
// instead of two, so half the message rounds, which is what small reductions pay for over
// TCP (Gloo). Every rank sums the same tensors in the same order, so results stay
// bit-identical across ranks. When a HostChannel is given, those gathers run on it instead of
// the process group: synchronously on the autograd thread at the end of backward, in bucket
// order (they are small; the channel saves the process group's thread hand-offs).
// At the end of backward an autograd-engine callback fills the slots of parameters that got
// no gradient with zeros, launches what is left, waits, and writes the averages back to .grad
// (defining .grad where it was undefined).
// With comm_dtype = kBFloat16, float32 buckets travel as bfloat16 (half the bytes) and are
// summed in float32: a gathering bucket gathers bfloat16 rows and sums them in float32; any
// other bucket is split into world-size chunks, exchanged by all-to-all (rank r receives
// everyone's chunk r), summed in float32 in rank order, rounded once to bfloat16 and
// all-gathered: the bytes of a ring all-reduce at half width. (Gloo in LibTorch 1.13 cannot
// reduce bfloat16; both collectives only copy bytes.) Every rank gets the same values.
//
// Threading: hooks run on the autograd thread; state is guarded by a mutex. Construct and
// destroy on the training thread, not during a backward pass.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

#include "ddp/host_channel.h"

namespace ddp {

struct ReducerOptions {
  std::size_t bucket_cap_bytes = 25u * 1024u * 1024u;  // PyTorch's default (25 MB)
  // CPU buckets whose gathered size (world size x bucket bytes) is at most this are reduced
  // by all-gather + local sum; 0: always all-reduce. CUDA buckets always all-reduce.
  std::size_t gather_max_bytes = 1u << 20;
  // The dtype gradients travel in: kFloat (as they are) or kBFloat16 (float32 buckets only).
  at::ScalarType comm_dtype = at::kFloat;
};

class GradientReducer {
 public:
  // `channel` (may be null): where gathering buckets are reduced; its prepare calls happen
  // here, so every rank must construct its reducer at the same point.
  GradientReducer(c10::intrusive_ptr<c10d::ProcessGroup> group, std::vector<at::Tensor> params,
                  ReducerOptions options, std::shared_ptr<HostChannel> channel = nullptr);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // While disabled, backward only accumulates .grad locally (gradient accumulation).
  void set_sync_enabled(bool enabled);
  bool sync_enabled() const;

  // Number of buckets and the parameter indices of each (for tests and diagnostics).
  std::size_t bucket_count() const { return buckets_.size(); }
  std::vector<std::size_t> bucket_params(std::size_t bucket) const;
  // Whether bucket `bucket` is reduced by all-gather + local sum (see gather_max_bytes).
  bool bucket_gathers(std::size_t bucket) const { return buckets_.at(bucket).gathers(); }
  // Reductions completed since construction.
  std::int64_t reductions() const;
  // Gradient bytes one rank sends per synchronised step, by the nominal formulas of the
  // algorithms used (B = a bucket's bytes in its wire dtype, w = world size): all-reduce
  // (ring) and all-to-all + all-gather 2(w-1)/w x B, all-gather (w-1) x B.
  std::size_t sent_bytes_per_step() const;

 private:
  struct Bucket {
    std::vector<std::size_t> params;  // indices into params_
    std::vector<std::int64_t> offsets;
    at::Tensor flat;
    std::size_t pending = 0;
    std::vector<at::Tensor> gathered;  // reduced by all-gather: one tensor per rank, else empty
    bool gathers() const { return !gathered.empty(); }
    at::Tensor wire;       // bfloat16 copy of flat (padded to world x chunk when split)
    at::Tensor scattered;  // split: the all-to-all's output, world chunks of this rank's part
    bool split() const { return scattered.defined(); }
    std::unique_ptr<HostChannel::Prepared> channel_gather;  // set: gathered on the channel
    c10::intrusive_ptr<c10d::Work> work;                    // process-group work, if any
  };
  struct Slot {
    std::size_t bucket = 0;
    std::size_t index_in_bucket = 0;
    bool ready = false;
  };

  void on_grad_ready(std::size_t param);
  void launch_ready_buckets_locked();
  void launch_locked(Bucket& bucket);
  void finalize();
  void gather_split_chunks(Bucket& bucket);

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::shared_ptr<HostChannel> channel_;
  std::vector<at::Tensor> params_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  struct Hooks;  // the hooked gradient accumulators, held, with their hooks' keys
  std::unique_ptr<Hooks> hooks_;

  mutable std::mutex mutex_;
  bool sync_enabled_ = true;
  bool in_backward_ = false;
  std::size_t next_bucket_ = 0;
  std::int64_t reductions_ = 0;
  std::size_t sent_bytes_per_step_ = 0;
};

// Copies every tensor of rank `root` into the same tensor on all ranks: one broadcast per
// device with all dtypes packed as bytes. Used for parameters and buffers at construction and
// for buffers before each forward.
void broadcast_tensors(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                       const std::vector<at::Tensor>& tensors, int root = 0);

}  // namespace ddp
