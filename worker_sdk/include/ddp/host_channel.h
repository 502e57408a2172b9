// A second, synchronous Gloo connection between the ranks for small collectives on CPU tensors.
//
// c10d's ProcessGroupGloo runs each collective on one of its worker threads and receives
// through the device's event-loop thread, so a small collective pays several thread hand-offs;
// on a VM each wake of an idle vCPU is slow. Measured between two workers on the 2-vCPU
// machine this project is developed on (bench/training/collective_latency.cc): all-gather of
// 20,000 floats 675 us through the process group, 62 us here. The channel's pairs are in
// Gloo's synchronous mode: a collective runs start to end on the calling thread, which sends
// and then blocks in recv on the sockets.
// DistributedDataParallel uses it for small gradient buckets and buffer broadcasts.
//
// Contract:
// - connect() is collective: every rank calls it at the same point (it connects a full mesh
//   of sockets through the store under its own key prefix).
// - prepare_*() sets a collective up over fixed buffers (Gloo registers them with the pairs);
//   every rank prepares the same collectives in the same order. The buffers must stay alive
//   and in place while the Prepared object lives; it keeps the channel alive.
// - Prepared::run() is collective: it blocks the calling thread until every rank ran it,
//   and throws std::runtime_error naming the peer problem when a connection fails or the
//   channel's timeout passes without the peer. Runs are serialised by a per-channel mutex;
//   ranks must run collectives in the same order (as with any process group).
// - CPU, contiguous tensors only (checked at prepare time: std::invalid_argument).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace ddp {

class HostChannel {
 public:
  // One prepared collective; run() as often as needed.
  class Prepared {
   public:
    virtual ~Prepared() = default;
    virtual void run() = 0;
  };

  // False when this SDK was built without Gloo's headers: connect() then throws.
  static bool available();

  // Connects `world_size` ranks through `store` (blocks until all have connected; throws
  // std::runtime_error after `timeout`). Device: GLOO_SOCKET_IFNAME's first interface when set,
  // else the one for this host's name, as the process group chooses.
  static std::shared_ptr<HostChannel> connect(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int world_size,
                                              std::chrono::milliseconds timeout);
  ~HostChannel();
  HostChannel(const HostChannel&) = delete;
  HostChannel& operator=(const HostChannel&) = delete;

  int rank() const;
  int world_size() const;

  // After run(): `output` (world_size x the bytes of `input`, any dtype) holds rank r's input
  // bytes in its r-th slice.
  std::unique_ptr<Prepared> prepare_allgather(const at::Tensor& input, const at::Tensor& output);
  // After run(): `io` holds rank `root`'s bytes on every rank.
  std::unique_ptr<Prepared> prepare_broadcast(const at::Tensor& io, int root);

  struct State;  // the Gloo context and the run mutex (host_channel.cc)

 private:
  explicit HostChannel(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ddp
