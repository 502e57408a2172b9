#include "ddp/reducer.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ddp/heartbeat.h"

namespace ddp {
namespace {

// Runs after AccumulateGrad has written the parameter's .grad.
class GradReadyHook : public torch::autograd::FunctionPostHook {
 public:
  explicit GradReadyHook(std::function<void()> ready) : ready_(std::move(ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    ready_();
    return outputs;
  }

 private:
  std::function<void()> ready_;
};

// Collectives that only copy (gathers, all-to-all) see bfloat16 as its bytes: Gloo has no
// bfloat16 in LibTorch 1.13, and Debian's 2.14 build no 16-bit float type at all; uint8 is in all.
at::Tensor as_copyable(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? t.view(at::kByte) : t;
}

}  // namespace

// A tensor holds its gradient accumulator weakly: the reducer keeps each hooked one alive, by
// whatever grad_accumulator() returns (a shared_ptr in LibTorch 1.13 and 2.6, intrusive in 2.14).
struct GradientReducer::Hooks {
  using Accumulator =
      decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));
  std::vector<std::pair<Accumulator, std::uintptr_t>> hooked;
};

void broadcast_tensors(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                       const std::vector<at::Tensor>& tensors, int root) {
  at::NoGradGuard no_grad;
  // One broadcast per device: every tensor's bytes packed into one uint8 buffer, so mixed
  // dtypes (float statistics, int64 batch counters) cost a single collective.
  std::map<std::string, std::vector<at::Tensor>> by_device;
  for (const auto& t : tensors) {
    if (t.defined() && t.numel() > 0) by_device[t.device().str()].push_back(t);
  }
  for (auto& [device, group_tensors] : by_device) {
    std::vector<at::Tensor> bytes;
    for (const auto& t : group_tensors)
      bytes.push_back(t.contiguous().reshape({-1}).view(at::kByte));
    std::vector<at::Tensor> io{at::cat(bytes)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    group->broadcast(io, opts)->wait();
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < group_tensors.size(); ++i) {
      at::Tensor& t = group_tensors[i];
      const std::int64_t n = bytes[i].numel();
      // clone: a fresh, aligned storage to reinterpret as the tensor's dtype
      t.copy_(io[0].narrow(0, offset, n).clone().view(t.scalar_type()).view(t.sizes()));
      offset += n;
    }
  }
}

GradientReducer::GradientReducer(c10::intrusive_ptr<c10d::ProcessGroup> group,
                                 std::vector<at::Tensor> params, ReducerOptions options,
                                 std::shared_ptr<HostChannel> channel)
    : group_(std::move(group)),
      channel_(std::move(channel)),
      params_(std::move(params)),
      slots_(params_.size()) {
  if (options.bucket_cap_bytes == 0) {
    throw std::invalid_argument("ReducerOptions::bucket_cap_bytes must be > 0");
  }
  // Reverse order: the gradients of the last parameters arrive first in backward.
  std::size_t bytes = 0;
  for (std::size_t k = params_.size(); k-- > 0;) {
    const at::Tensor& p = params_[k];
    if (!p.requires_grad()) continue;
    if (!p.is_leaf()) throw std::invalid_argument("DDP parameters must be leaf tensors");
    std::size_t size = static_cast<std::size_t>(p.numel()) * p.element_size();
    bool new_bucket =
        buckets_.empty() ||
        (bytes + size > options.bucket_cap_bytes && !buckets_.back().params.empty()) ||
        buckets_.back().flat.scalar_type() != p.scalar_type() ||
        buckets_.back().flat.device() != p.device();
    if (new_bucket) {
      buckets_.emplace_back();
      buckets_.back().flat = at::empty({0}, p.options().requires_grad(false));
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    slots_[k] = Slot{buckets_.size() - 1, b.params.size(), false};
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].numel());
    b.params.push_back(k);
    bytes += size;
  }
  if (options.comm_dtype != at::kFloat && options.comm_dtype != at::kBFloat16) {
    throw std::invalid_argument("ReducerOptions::comm_dtype must be kFloat or kBFloat16");
  }
  const auto world = static_cast<std::size_t>(group_->getSize());
  const auto w = static_cast<std::int64_t>(world);
  for (Bucket& b : buckets_) {
    std::int64_t total = b.offsets.back() + params_[b.params.back()].numel();
    b.flat = at::zeros({total}, b.flat.options().requires_grad(false));
    b.pending = b.params.size();
    const bool narrow =
        world > 1 && options.comm_dtype == at::kBFloat16 && b.flat.scalar_type() == at::kFloat;
    const auto wire_options = narrow ? b.flat.options().dtype(at::kBFloat16) : b.flat.options();
    const std::size_t wire_bytes =
        static_cast<std::size_t>(total) * (narrow ? 2u : b.flat.element_size());
    if (world > 1 && b.flat.is_cpu() && world * wire_bytes <= options.gather_max_bytes) {
      // One [world, total] buffer; rank r's copy is row r (the group's outputs, or the channel
      // fills it in place).
      at::Tensor all = at::empty({w, total}, wire_options);
      for (std::int64_t r = 0; r < w; ++r) b.gathered.push_back(all[r]);
      if (narrow) b.wire = at::empty({total}, wire_options);
      if (channel_) b.channel_gather = channel_->prepare_allgather(narrow ? b.wire : b.flat, all);
      sent_bytes_per_step_ += (world - 1) * wire_bytes;
    } else if (narrow) {
      const std::int64_t chunk = (total + w - 1) / w;
      b.wire = at::zeros({w * chunk}, wire_options);
      b.scattered = at::empty({w * chunk}, wire_options);
      sent_bytes_per_step_ += 2 * (world - 1) * static_cast<std::size_t>(chunk) * 2u;
    } else if (world > 1) {
      sent_bytes_per_step_ += 2 * (world - 1) * wire_bytes / world;
    }
  }
  hooks_ = std::make_unique<Hooks>();
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].requires_grad()) continue;
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    const std::uintptr_t key =
        acc->add_post_hook(std::make_unique<GradReadyHook>([this, k] { on_grad_ready(k); }));
    hooks_->hooked.emplace_back(std::move(acc), key);
  }
}

GradientReducer::~GradientReducer() {
  for (auto& [acc, key] : hooks_->hooked) acc->del_post_hook(key);
}

void GradientReducer::set_sync_enabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  sync_enabled_ = enabled;
}

bool GradientReducer::sync_enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sync_enabled_;
}

std::vector<std::size_t> GradientReducer::bucket_params(std::size_t bucket) const {
  return buckets_.at(bucket).params;
}

std::size_t GradientReducer::sent_bytes_per_step() const { return sent_bytes_per_step_; }

std::int64_t GradientReducer::reductions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reductions_;
}

void GradientReducer::on_grad_ready(std::size_t param) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sync_enabled_) return;
  if (!in_backward_) {
    in_backward_ = true;
    next_bucket_ = 0;
    for (Bucket& b : buckets_) {
      b.pending = b.params.size();
      b.work.reset();
    }
    for (Slot& s : slots_) s.ready = false;
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
  }
  Slot& slot = slots_[param];
  if (slot.ready) return;  // the same parameter used twice in one graph: grad is cumulative
  slot.ready = true;
  Bucket& bucket = buckets_[slot.bucket];
  const at::Tensor& grad = params_[param].grad();
  at::Tensor view = bucket.flat.narrow(0, bucket.offsets[slot.index_in_bucket], grad.numel());
  view.copy_(grad.reshape({-1}));
  if (--bucket.pending == 0) launch_ready_buckets_locked();
}

void GradientReducer::launch_ready_buckets_locked() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    launch_locked(buckets_[next_bucket_]);
    ++next_bucket_;
  }
}

void GradientReducer::launch_locked(Bucket& bucket) {
  bucket.flat.div_(group_->getSize());
  if (bucket.wire.defined()) bucket.wire.narrow(0, 0, bucket.flat.numel()).copy_(bucket.flat);
  if (bucket.channel_gather) return;  // runs on the host channel in finalize()
  if (bucket.split()) {
    at::Tensor out = as_copyable(bucket.scattered);
    at::Tensor in = as_copyable(bucket.wire);
    std::vector<std::int64_t> even;  // no split sizes: world equal chunks
    // all_to_all_single is the newer name (alltoall_base is deprecated in LibTorch 2.14).
    bucket.work = [&](auto& group) {
      if constexpr (requires { group.all_to_all_single(out, in, even, even); }) {
        return group.all_to_all_single(out, in, even, even);
      } else {
        return group.alltoall_base(out, in, even, even);
      }
    }(*group_);
    return;
  }
  if (!bucket.gathers()) {
    std::vector<at::Tensor> io{bucket.flat};  // a sum: the tensor's own type
    bucket.work = group_->allreduce(io);
    return;
  }
  std::vector<at::Tensor> in{as_copyable(bucket.wire.defined() ? bucket.wire : bucket.flat)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (const auto& row : bucket.gathered) out[0].push_back(as_copyable(row));
  bucket.work = group_->allgather(out, in);
}

// A split bucket's second half: this rank's chunk summed in float32 (rank order), rounded to
// bfloat16 once, all-gathered into `wire`.
void GradientReducer::gather_split_chunks(Bucket& bucket) {
  const std::int64_t world = group_->getSize();
  const std::int64_t chunk = bucket.scattered.numel() / world;
  at::Tensor sum = bucket.scattered.narrow(0, 0, chunk).to(at::kFloat);
  for (std::int64_t r = 1; r < world; ++r) sum.add_(bucket.scattered.narrow(0, r * chunk, chunk));
  std::vector<at::Tensor> in{as_copyable(sum.to(at::kBFloat16))};
  std::vector<std::vector<at::Tensor>> out(1);
  for (std::int64_t r = 0; r < world; ++r)
    out[0].push_back(as_copyable(bucket.wire.narrow(0, r * chunk, chunk)));
  bucket.work = group_->allgather(out, in);
}

void GradientReducer::finalize() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_backward_ = false;
  // This rank's backward is done; it now waits for the others' gradients.
  Heartbeat::process().beat();
  // Parameters that got no gradient on this rank contribute zeros.
  for (; next_bucket_ < buckets_.size(); ++next_bucket_) {
    Bucket& b = buckets_[next_bucket_];
    for (std::size_t i = 0; i < b.params.size(); ++i) {
      if (!slots_[b.params[i]].ready) {
        b.flat.narrow(0, b.offsets[i], params_[b.params[i]].numel()).zero_();
      }
    }
    b.pending = 0;
    launch_locked(b);
  }
  at::NoGradGuard no_grad;
  // Host-channel gathers run here, on this thread, in bucket order on every rank, while the
  // process group's all-reduces (if any) progress on its threads.
  for (Bucket& b : buckets_) {
    if (b.channel_gather) b.channel_gather->run();
  }
  for (Bucket& b : buckets_) {  // split buckets: all-to-all done, all-gather the sums
    if (!b.split()) continue;
    b.work->wait();
    gather_split_chunks(b);
  }
  for (Bucket& b : buckets_) {
    if (b.work) b.work->wait();
    if (b.split()) b.flat.copy_(b.wire.narrow(0, 0, b.flat.numel()));
    if (b.gathers()) {  // the same sum, in rank order, on every rank (float32 accumulation)
      b.flat.copy_(b.gathered[0]);
      for (std::size_t r = 1; r < b.gathered.size(); ++r) b.flat.add_(b.gathered[r]);
    }
    for (std::size_t i = 0; i < b.params.size(); ++i) {
      at::Tensor& p = params_[b.params[i]];
      at::Tensor avg = b.flat.narrow(0, b.offsets[i], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
    }
  }
  ++reductions_;
}

}  // namespace ddp
