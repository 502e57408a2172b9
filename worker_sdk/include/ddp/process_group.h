// Joining the job: the worker store and the default process group, set up exactly as
// torch.distributed.init_process_group("env://") does in the PyTorch whose LibTorch this SDK is
// built against (1.13 or 2.x, chosen at compile time), so C++ and Python ranks of that version
// can share one job:
//   TCPStore(MASTER_ADDR, MASTER_PORT)              all clients under the agent store, or
//                                                   rank 0 hosting it (multi-tenant) otherwise
//   -> PrefixStore("/worker/attempt_<restart>")     1.13, agent store only (2.x: no prefix)
//   -> PrefixStore("default_pg")                    what WorkerContext::store() returns
//   1.13: -> PrefixStore("0") -> ProcessGroupGloo / ProcessGroupNCCL; then the store-based
//         barrier key "store_based_barrier_key:1" is incremented.
//   2.x:  -> PrefixStore("0/") (the ProcessGroup) -> PrefixStore("cpu/") -> ProcessGroupGloo
//         or PrefixStore("cuda/") -> ProcessGroupNCCL; under TORCH_DIST_INIT_BARRIER=1 every
//         rank then waits in the barrier on "store_based_barrier_key:0".
//
// Backend: NCCL when this SDK was built against a LibTorch with CUDA and NCCL (DDP_WITH_NCCL)
// and a GPU is visible (device cuda:LOCAL_RANK); Gloo otherwise; overridable.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/status.h"
#include "ddp/host_channel.h"
#include "ddp/worker_env.h"

namespace ddp {

enum class Backend { kAuto, kGloo, kNccl };

struct InitOptions {
  Backend backend = Backend::kAuto;
  // Store operations and collectives; PyTorch's default_pg_timeout is 30 minutes.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  // Where the environment comes from (tests inject a map).
  EnvLookup lookup = process_env();
};

// True when this build of the SDK contains the NCCL process group.
bool built_with_nccl();

// One worker's membership in the job. Owns the store connection and the process group; both
// live as long as the context. Created on the main thread; the process group may then be used
// from any thread (c10d process groups are thread-safe for issuing work).
class WorkerContext {
 public:
  WorkerContext(WorkerEnv env, c10::intrusive_ptr<c10d::Store> store,
                c10::intrusive_ptr<c10d::ProcessGroup> group, Backend backend,
                std::chrono::milliseconds timeout = std::chrono::minutes(30));
  ~WorkerContext();
  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  const WorkerEnv& env() const { return env_; }
  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  bool is_rank0() const { return env_.rank == 0; }
  // Resolved backend (never kAuto) and the device tensors should live on for it.
  Backend backend() const { return backend_; }
  c10::Device device() const;
  // The "default_pg"-prefixed store, shared with Python's default group.
  const c10::intrusive_ptr<c10d::Store>& store() const { return store_; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const { return group_; }
  // The synchronous CPU channel (host_channel.h), connected on the first call: that first call
  // is collective (every rank makes it at the same point). Throws std::runtime_error when
  // connecting fails or HostChannel::available() is false. Thread-safe.
  std::shared_ptr<HostChannel> host_channel() const;

 private:
  WorkerEnv env_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  Backend backend_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex channel_mutex_;
  mutable std::shared_ptr<HostChannel> channel_;
};

// Reads the environment, connects to the store and builds the process group. Expected failures
// (bad environment, store unreachable within the timeout, NCCL requested but unavailable)
// come back as a Status; the message says what to fix. Sets SIGPIPE to ignored, as the Python
// interpreter does for torchrun's workers, so a vanished peer is an error, not a silent death.
Result<std::unique_ptr<WorkerContext>> init(const InitOptions& options = {});

// Builds a Gloo group of `world_size` over an existing store, with the Gloo backend init uses
// (for ranks run as threads over a c10d::HashStore, as the SDK's tests do). Uses GLOO_SOCKET_IFNAME
// when set, else the default device, as PyTorch does. Blocks until all ranks have connected; throws
// c10::Error on timeout.
c10::intrusive_ptr<c10d::ProcessGroup> make_gloo_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                       int rank, int world_size,
                                                       std::chrono::milliseconds timeout);

}  // namespace ddp
