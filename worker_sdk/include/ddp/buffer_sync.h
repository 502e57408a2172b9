// Keeps module buffers (batch-norm statistics and counters) equal to rank `root`'s: what
// DistributedDataParallel does before each forward when broadcast_buffers is set.
//
// With a HostChannel and every buffer on the CPU, the buffers are packed into one persistent
// byte tensor (each buffer at an 8-byte aligned offset) and broadcast over the channel on the
// calling thread; otherwise one broadcast through the process group (broadcast_tensors).
// sync() is collective: every rank calls it with buffers of the same sizes and dtypes, in the
// same order relative to other collectives. Use from one thread (the training thread).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

#include "ddp/host_channel.h"

namespace ddp {

class BufferSync {
 public:
  // `channel` may be null (process group only).
  BufferSync(c10::intrusive_ptr<c10d::ProcessGroup> group, std::shared_ptr<HostChannel> channel,
             int root = 0);
  BufferSync(const BufferSync&) = delete;
  BufferSync& operator=(const BufferSync&) = delete;

  // Copies rank root's values into `buffers` on every other rank. Throws what the transport
  // throws (std::runtime_error / c10::Error) when a peer fails.
  void sync(const std::vector<at::Tensor>& buffers);
  // Syncs that went over the host channel (for tests and diagnostics).
  std::int64_t channel_syncs() const { return channel_syncs_; }

 private:
  void sync_on_channel(const std::vector<at::Tensor>& buffers);

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::shared_ptr<HostChannel> channel_;
  int root_;
  at::Tensor pack_;  // uint8, persistent: the prepared broadcast points into it
  std::unique_ptr<HostChannel::Prepared> broadcast_;
  std::int64_t channel_syncs_ = 0;
};

}  // namespace ddp
