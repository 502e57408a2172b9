#include "ddp/process_group.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef DDP_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <csignal>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "ddp/host_allocator.h"
#include "gloo_devices.h"

namespace ddp {
namespace {

// init_process_group's keys, as the LibTorch this SDK is built against lays them out (checked
// against distributed_c10d.py of 1.13 and 2.6). PrefixStore joins prefix + "/" + key, so 2.x's
// "0/" and "cpu/" give "default_pg/0//cpu//<key>".
constexpr const char* kDefaultGroupPrefix = "default_pg";
#if TORCH_VERSION_MAJOR >= 2
// _new_process_group_helper: PrefixStore(f"{group_name}/") for the group, then
// PrefixStore(f"{device}/") per backend (Gloo's first device is "cpu", NCCL's "cuda"). The
// store-based barrier after init runs only under TORCH_DIST_INIT_BARRIER=1, keyed by group name.
constexpr const char* kFirstGroupName = "0/";
constexpr const char* kGlooDevicePrefix = "cpu/";
constexpr const char* kNcclDevicePrefix = "cuda/";
constexpr const char* kInitBarrierKey = "store_based_barrier_key:0";
#else
// 1.13: the group's store is PrefixStore("0"); the barrier (always run) counts groups from 1.
constexpr const char* kFirstGroupName = "0";
constexpr const char* kInitBarrierKey = "store_based_barrier_key:1";
#endif
// Keys of the host channel's full-mesh connect, beside the default group's "0/".
constexpr const char* kHostChannelPrefix = "ddp_host_channel";

c10::intrusive_ptr<c10d::Store> connect_store(const WorkerEnv& env,
                                              std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = env.master_port;
  opts.numWorkers = static_cast<std::size_t>(env.world_size);
  opts.timeout = timeout;
#if TORCH_VERSION_MAJOR >= 2
  // 2.4+ defaults to libuv, which a build without it (Debian 13's 2.6) refuses; the classic
  // backend speaks the same protocol.
  opts.useLibUV = false;
#endif
  if (env.use_agent_store) {
    opts.isServer = false;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
    // No PrefixStore for an empty prefix (2.x): it would still join "" + "/" + key.
    if (env.store_prefix().empty()) return tcp;
    return c10::make_intrusive<c10d::PrefixStore>(env.store_prefix(), tcp);
  }
  opts.isServer = env.rank == 0;
  opts.waitWorkers = true;
  opts.multiTenant = true;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
}

// The store a backend (ProcessGroupGloo / ProcessGroupNCCL) of the first group is built on.
c10::intrusive_ptr<c10d::Store> backend_store(const c10::intrusive_ptr<c10d::Store>& group_store,
                                              [[maybe_unused]] Backend backend) {
#if TORCH_VERSION_MAJOR >= 2
  return c10::make_intrusive<c10d::PrefixStore>(
      backend == Backend::kNccl ? kNcclDevicePrefix : kGlooDevicePrefix, group_store);
#else
  return group_store;
#endif
}

// The end of init_process_group on the default group's store: the store-based barrier and the
// group's sequence number, in the order of the LibTorch this SDK is built against (the Python
// rank 0 sets the sequence number the others read, up to the LibTorch that dropped it). 1.13: the
// barrier (always run), then the sequence number; the SDK adds its arrival without waiting (Gloo's
// constructor already connected every rank). 2.x: the sequence number, then the barrier only under
// TORCH_DIST_INIT_BARRIER=1 (Python: int(value) == 1), where every rank waits and the last to
// arrive sets "<key>:last_worker", as _store_based_barrier does.
void finish_init(c10d::ProcessGroup& group, c10d::Store& store,
                 [[maybe_unused]] const EnvLookup& lookup, [[maybe_unused]] int world_size,
                 [[maybe_unused]] std::chrono::milliseconds timeout) {
#if TORCH_VERSION_MAJOR >= 2
  // 2.14's ProcessGroup no longer has it (every rank starts at 0; Python stopped calling it).
  [](auto& g) {
    if constexpr (requires { g.setSequenceNumberForGroup(); }) g.setSequenceNumberForGroup();
  }(group);
  std::optional<std::string> enabled = lookup("TORCH_DIST_INIT_BARRIER");
  if (!enabled || *enabled != "1") return;
  const std::string last_worker = std::string(kInitBarrierKey) + ":last_worker";
  store.add(kInitBarrierKey, 1);
  if (store.add(kInitBarrierKey, 0) == world_size) {
    store.set(last_worker, std::vector<std::uint8_t>{'1'});
  }
  store.wait({last_worker}, timeout);
#else
  store.add(kInitBarrierKey, 1);
  group.setSequenceNumberForGroup();
#endif
}

Backend resolve_backend(Backend requested) {
  if (requested != Backend::kAuto) return requested;
  if (built_with_nccl() && torch::cuda::is_available()) return Backend::kNccl;
  return Backend::kGloo;
}

}  // namespace

bool built_with_nccl() {
#ifdef DDP_WITH_NCCL
  return true;
#else
  return false;
#endif
}

WorkerContext::WorkerContext(WorkerEnv env, c10::intrusive_ptr<c10d::Store> store,
                             c10::intrusive_ptr<c10d::ProcessGroup> group, Backend backend,
                             std::chrono::milliseconds timeout)
    : env_(std::move(env)),
      store_(std::move(store)),
      group_(std::move(group)),
      backend_(backend),
      timeout_(timeout) {}

std::shared_ptr<HostChannel> WorkerContext::host_channel() const {
  std::lock_guard<std::mutex> lock(channel_mutex_);
  if (!channel_) {
    channel_ =
        HostChannel::connect(c10::make_intrusive<c10d::PrefixStore>(kHostChannelPrefix, store_),
                             env_.rank, env_.world_size, timeout_);
  }
  return channel_;
}

WorkerContext::~WorkerContext() = default;

c10::Device WorkerContext::device() const {
  if (backend_ == Backend::kNccl) {
    return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(env_.local_rank));
  }
  return c10::Device(c10::DeviceType::CPU);
}

namespace detail {

std::vector<std::shared_ptr<::gloo::transport::Device>> gloo_devices() {
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifnames != nullptr && *ifnames != '\0') {
    std::stringstream list(ifnames);
    std::string name;
    while (std::getline(list, name, ',')) {
      if (!name.empty()) {
        devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
      }
    }
  }
  if (devices.empty()) devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  return devices;
}

// LibTorch 2.x made ProcessGroupGloo and ProcessGroupNCCL c10d::Backend objects: a
// c10d::ProcessGroup holds one per device type and dispatches its collectives to them (what
// Python's init_process_group builds). In 1.13 they are ProcessGroups themselves. Checked
// against 1.13 and 2.6.
template <typename Impl>
c10::intrusive_ptr<c10d::ProcessGroup> as_process_group(
    [[maybe_unused]] const c10::intrusive_ptr<c10d::Store>& store, c10::intrusive_ptr<Impl> impl,
    [[maybe_unused]] c10::DeviceType device) {
#if TORCH_VERSION_MAJOR >= 2
  const auto type = device == c10::kCUDA ? c10d::ProcessGroup::BackendType::NCCL
                                         : c10d::ProcessGroup::BackendType::GLOO;
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, impl->getRank(), impl->getSize());
  group->setDefaultBackend(type);
  group->setBackend(device, type, c10::intrusive_ptr<c10d::Backend>(std::move(impl)));
  return group;
#else
  return impl;
#endif
}

}  // namespace detail

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo_backend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size,
    std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices = detail::gloo_devices();
  options->threads = static_cast<int>(options->devices.size()) * 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
}

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                       int rank, int world_size,
                                                       std::chrono::milliseconds timeout) {
  return detail::as_process_group(store, make_gloo_backend(store, rank, world_size, timeout),
                                  c10::kCPU);
}

Result<std::unique_ptr<WorkerContext>> init(const InitOptions& options) {
  Result<WorkerEnv> env = parse_worker_env(options.lookup);
  if (!env) return env.status();
  tune_host_allocator(options.lookup);  // batch tensors reuse heap blocks (host_allocator.h)
  // Gloo writes with writev(): a peer that died must surface as an exception naming it, not
  // as SIGPIPE killing this worker silently. Python workers get the same from the interpreter.
  std::signal(SIGPIPE, SIG_IGN);
  Backend backend = resolve_backend(options.backend);
  if (backend == Backend::kNccl) {
    if (!built_with_nccl()) {
      return invalid_argument(
          "the NCCL backend was requested but this worker SDK was built against a LibTorch "
          "without CUDA/NCCL; use Backend::kGloo or rebuild against a CUDA LibTorch");
    }
    if (!torch::cuda::is_available() ||
        static_cast<int>(torch::cuda::device_count()) <= env->local_rank) {
      return invalid_argument("the NCCL backend needs GPU " + std::to_string(env->local_rank) +
                              " (LOCAL_RANK) but " + std::to_string(torch::cuda::device_count()) +
                              " GPU(s) are visible; check CUDA_VISIBLE_DEVICES or use Gloo");
    }
  }

  c10::intrusive_ptr<c10d::Store> base;
  try {
    base = connect_store(*env, options.timeout);
  } catch (const std::exception& e) {
    return peer_gone("cannot reach the worker store at " + env->master_addr + ":" +
                     std::to_string(env->master_port) + " (" + e.what() +
                     "); is the launcher running and MASTER_ADDR/MASTER_PORT right?");
  }
  auto store = c10::make_intrusive<c10d::PrefixStore>(kDefaultGroupPrefix, base);
  store->setTimeout(options.timeout);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>(kFirstGroupName, store);

  c10::intrusive_ptr<c10d::ProcessGroup> group;
  try {
    if (backend == Backend::kNccl) {
#ifdef DDP_WITH_NCCL
      // One GPU per local rank, as with torchrun: cuda:LOCAL_RANK becomes the current device.
      c10::cuda::set_device(static_cast<c10::DeviceIndex>(env->local_rank));
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 2)
      // Before 2.2 NCCL reads only the old name; ddprun sets TORCH_NCCL_ASYNC_ERROR_HANDLING,
      // as torchrun 2.x does.
      if (const char* handling = std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING")) {
        ::setenv("NCCL_ASYNC_ERROR_HANDLING", handling, 0);
      }
#endif
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = options.timeout;
      group = detail::as_process_group(
          group_store,
          c10::make_intrusive<c10d::ProcessGroupNCCL>(backend_store(group_store, backend),
                                                      env->rank, env->world_size, nccl_options),
          c10::kCUDA);
#endif
    } else {
      group =
          detail::as_process_group(group_store,
                                   make_gloo_backend(backend_store(group_store, backend), env->rank,
                                                     env->world_size, options.timeout),
                                   c10::kCPU);
    }
    finish_init(*group, *store, options.lookup, env->world_size, options.timeout);
  } catch (const std::exception& e) {
    return timeout_error("building the process group failed for rank " + std::to_string(env->rank) +
                         " of " + std::to_string(env->world_size) + ": " + e.what());
  }
  return std::make_unique<WorkerContext>(std::move(*env), std::move(store), std::move(group),
                                         backend, options.timeout);
}

}  // namespace ddp
