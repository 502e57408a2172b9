// DistributedDataParallel for torch::nn modules: the C++ counterpart of
// torch.nn.parallel.DistributedDataParallel.
//
//   auto ctx = ddp::init().value();
//   auto model = ddp::DistributedDataParallel<Net>(Net(), *ctx);
//   auto loss = torch::cross_entropy(model.forward(x), y);
//   loss.backward();                // gradients arrive averaged over all ranks
//   optimizer.step();
//
// At construction the parameters and buffers of rank 0 are copied to every rank. Before each
// forward the buffers (e.g. batch-norm statistics) are broadcast from rank 0 unless
// broadcast_buffers is false. Built from a WorkerContext on the CPU (Gloo) with more than one
// rank, small gradient buckets and the buffer broadcasts go over the context's HostChannel
// (created on first use, collectively) unless host_channel is false; built from a bare process
// group, everything goes through the group. The wrapper owns neither the group nor the
// context; the module holder shares ownership of the module. Names of module() parameters carry no
// "module." prefix, so checkpoints load into plain modules.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <utility>

#include "ddp/buffer_sync.h"
#include "ddp/heartbeat.h"
#include "ddp/process_group.h"
#include "ddp/reducer.h"

namespace ddp {

struct DdpOptions {
  std::size_t bucket_cap_bytes = 25u * 1024u * 1024u;
  bool broadcast_buffers = true;
  std::size_t gather_max_bytes = ReducerOptions{}.gather_max_bytes;  // see ReducerOptions
  // Small CPU collectives over the context's synchronous HostChannel (see host_channel.h).
  bool host_channel = true;
  // kBFloat16: float32 gradients travel as bfloat16 and are summed in float32 (see reducer.h).
  at::ScalarType gradient_dtype = at::kFloat;
};

template <typename ModuleHolder>
class DistributedDataParallel {
 public:
  DistributedDataParallel(ModuleHolder module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                          DdpOptions options = {})
      : DistributedDataParallel(std::move(module), std::move(group), options, nullptr) {}
  DistributedDataParallel(ModuleHolder module, const WorkerContext& ctx, DdpOptions options = {})
      : DistributedDataParallel(std::move(module), ctx.process_group(), options,
                                channel_for(ctx, options)) {}

  template <typename... Args>
  decltype(auto) forward(Args&&... args) {
    Heartbeat::process().begin_step();  // progress for ddprun's hang detection
    if (options_.broadcast_buffers && group_->getSize() > 1) {
      auto buffers = module_->buffers();
      if (!buffers.empty()) buffer_sync_->sync(buffers);
    }
    return module_->forward(std::forward<Args>(args)...);
  }

  ModuleHolder& module() { return module_; }
  // Whether small collectives use the host channel.
  bool uses_host_channel() const { return channel_ != nullptr; }
  auto* operator->() { return module_.get(); }
  GradientReducer& reducer() { return *reducer_; }

  // While the guard lives, backward accumulates gradients locally without communication;
  // the first backward after it ends averages the accumulated gradients.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(GradientReducer& reducer)
        : reducer_(reducer), previous_(reducer.sync_enabled()) {
      reducer_.set_sync_enabled(false);
    }
    ~NoSyncGuard() { reducer_.set_sync_enabled(previous_); }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    GradientReducer& reducer_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*reducer_); }

 private:
  DistributedDataParallel(ModuleHolder module, c10::intrusive_ptr<c10d::ProcessGroup> group,
                          DdpOptions options, std::shared_ptr<HostChannel> channel)
      : module_(std::move(module)),
        group_(std::move(group)),
        options_(options),
        channel_(std::move(channel)) {
    std::vector<at::Tensor> state = module_->parameters();
    for (const auto& b : module_->buffers()) state.push_back(b);
    broadcast_tensors(group_, state, 0);
    reducer_ = std::make_unique<GradientReducer>(
        group_, module_->parameters(),
        ReducerOptions{options_.bucket_cap_bytes, options_.gather_max_bytes,
                       options_.gradient_dtype},
        channel_);
    buffer_sync_ = std::make_unique<BufferSync>(group_, channel_, 0);
  }

  // The context's channel when it pays: CPU (Gloo) ranks, more than one, channel wanted and
  // built in. The same answer on every rank, so the collective first use is matched.
  static std::shared_ptr<HostChannel> channel_for(const WorkerContext& ctx,
                                                  const DdpOptions& options) {
    if (!options.host_channel || !HostChannel::available() || ctx.world_size() < 2 ||
        ctx.backend() != Backend::kGloo) {
      return nullptr;
    }
    return ctx.host_channel();
  }

  ModuleHolder module_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  DdpOptions options_;
  std::shared_ptr<HostChannel> channel_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<BufferSync> buffer_sync_;
};

}  // namespace ddp
