#include "ddp/buffer_sync.h"

#include <ATen/ATen.h>

#include "ddp/reducer.h"  // broadcast_tensors

namespace ddp {
namespace {

constexpr std::int64_t kAlign = 8;  // any dtype's view of the pack starts aligned

std::int64_t aligned(std::int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

BufferSync::BufferSync(c10::intrusive_ptr<c10d::ProcessGroup> group,
                       std::shared_ptr<HostChannel> channel, int root)
    : group_(std::move(group)), channel_(std::move(channel)), root_(root) {}

void BufferSync::sync(const std::vector<at::Tensor>& buffers) {
  bool all_cpu = true;
  for (const auto& b : buffers) all_cpu = all_cpu && (!b.defined() || b.is_cpu());
  if (channel_ && all_cpu) {
    sync_on_channel(buffers);
  } else {
    broadcast_tensors(group_, buffers, root_);
  }
}

void BufferSync::sync_on_channel(const std::vector<at::Tensor>& buffers) {
  at::NoGradGuard no_grad;
  std::int64_t total = 0;
  for (const auto& b : buffers) {
    if (b.defined()) total += aligned(static_cast<std::int64_t>(b.nbytes()));
  }
  if (total == 0) return;
  if (!pack_.defined() || pack_.numel() != total) {  // same sizes on every rank: same decision
    broadcast_.reset();
    pack_ = at::empty({total}, at::TensorOptions().dtype(at::kByte));
    broadcast_ = channel_->prepare_broadcast(pack_, root_);
  }
  // Calls fn(buffer, its slice of the pack) for every defined buffer, in pack order.
  auto for_each_slice = [&](auto&& fn) {
    std::int64_t offset = 0;
    for (const auto& b : buffers) {
      if (!b.defined()) continue;
      fn(b, pack_.narrow(0, offset, static_cast<std::int64_t>(b.nbytes())));
      offset += aligned(static_cast<std::int64_t>(b.nbytes()));
    }
  };
  const bool is_root = channel_->rank() == root_;
  if (is_root) {
    for_each_slice([](const at::Tensor& b, const at::Tensor& slice) {
      slice.copy_(b.contiguous().reshape({-1}).view(at::kByte));
    });
  }
  broadcast_->run();
  ++channel_syncs_;
  if (is_root) return;
  for_each_slice([](const at::Tensor& b, const at::Tensor& slice) {
    b.copy_(slice.view(b.scalar_type()).view(b.sizes()));
  });
}

}  // namespace ddp
