#include "ddp/host_channel.h"

#include <stdexcept>

#ifndef DDP_WITH_HOST_CHANNEL

namespace ddp {

struct HostChannel::State {};

bool HostChannel::available() { return false; }

std::shared_ptr<HostChannel> HostChannel::connect(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                  std::chrono::milliseconds) {
  throw std::runtime_error(
      "HostChannel: this worker SDK was built without Gloo's headers (libgloo-dev); use the "
      "process group");
}

HostChannel::HostChannel(std::shared_ptr<State> state) : state_(std::move(state)) {}
HostChannel::~HostChannel() = default;
int HostChannel::rank() const { return 0; }
int HostChannel::world_size() const { return 1; }
std::unique_ptr<HostChannel::Prepared> HostChannel::prepare_allgather(const at::Tensor&,
                                                                      const at::Tensor&) {
  throw std::logic_error("HostChannel: unavailable in this build");
}
std::unique_ptr<HostChannel::Prepared> HostChannel::prepare_broadcast(const at::Tensor&, int) {
  throw std::logic_error("HostChannel: unavailable in this build");
}

}  // namespace ddp

#else

#include <gloo/allgather_ring.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/buffer.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

#include "gloo_devices.h"

namespace ddp {

bool HostChannel::available() { return true; }

struct HostChannel::State {
  std::shared_ptr< ::gloo::transport::Device> device;  // declared first: outlives the pairs
  std::shared_ptr< ::gloo::rendezvous::Context> context;
  std::mutex run_mutex;
};

namespace {

void check_host_tensor(const at::Tensor& t, const char* what) {
  if (!t.defined() || !t.is_cpu() || !t.is_contiguous()) {
    throw std::invalid_argument(std::string("HostChannel: ") + what +
                                " must be a defined, contiguous CPU tensor");
  }
  if (t.nbytes() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument(std::string("HostChannel: ") + what +
                                " is larger than 2 GiB; use the process group");
  }
}

// Runs a Gloo algorithm under the channel's mutex; Gloo's exceptions become runtime_error.
template <typename Algorithm>
class PreparedAlgorithm final : public HostChannel::Prepared {
 public:
  PreparedAlgorithm(std::shared_ptr<HostChannel::State> state, std::unique_ptr<Algorithm> algorithm,
                    const char* name)
      : state_(std::move(state)), algorithm_(std::move(algorithm)), name_(name) {}

  void run() override {
    std::lock_guard<std::mutex> lock(state_->run_mutex);
    try {
      algorithm_->run();
    } catch (const ::gloo::Exception& e) {
      throw std::runtime_error(
          std::string("HostChannel ") + name_ + " on rank " +
          std::to_string(state_->context->rank) +
          " failed (a peer exited, hung past the timeout or was cut off): " + e.what());
    }
  }

 private:
  std::shared_ptr<HostChannel::State> state_;  // declared first: destroyed after the algorithm
  std::unique_ptr<Algorithm> algorithm_;
  const char* name_;
};

// Root to every rank over the pairs' bound buffers, with the channel's synchronous pairs. Not
// Gloo's BroadcastOneToAll: the Gloo beside LibTorch 2.14 rebuilt it on unbound buffers, which
// need asynchronous pairs. Each receiver first sends the root a clear-to-send byte, so the root
// writes only into a buffer whose owner is in run().
class RootBroadcast {
 public:
  RootBroadcast(::gloo::rendezvous::Context& context, std::uint8_t* data, std::size_t bytes,
                int root)
      : is_root_(context.rank == root) {
    const int slot = context.nextSlot();
    for (int peer = 0; peer < context.size; ++peer) {
      if (peer == context.rank || (!is_root_ && peer != root)) continue;
      auto link = std::make_unique<Link>();
      auto& pair = context.getPair(peer);
      if (is_root_) {
        link->ready = pair->createRecvBuffer(slot, &link->token, 1);
        link->data = pair->createSendBuffer(slot, data, bytes);
      } else {
        link->ready = pair->createSendBuffer(slot, &link->token, 1);
        link->data = pair->createRecvBuffer(slot, data, bytes);
      }
      links_.push_back(std::move(link));
    }
  }

  void run() {
    for (auto& link : links_) {
      if (is_root_) {
        link->ready->waitRecv();
        link->data->send();
      } else {
        link->ready->send();
        link->ready->waitSend();
        link->data->waitRecv();
      }
    }
    if (is_root_) {
      for (auto& link : links_) link->data->waitSend();
    }
  }

 private:
  struct Link {  // one per peer of the root; the root's only peer elsewhere
    std::uint8_t token = 0;
    std::unique_ptr< ::gloo::transport::Buffer> ready, data;
  };
  bool is_root_;
  std::vector<std::unique_ptr<Link> > links_;
};

}  // namespace

HostChannel::HostChannel(std::shared_ptr<State> state) : state_(std::move(state)) {}
HostChannel::~HostChannel() = default;

std::shared_ptr<HostChannel> HostChannel::connect(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout) {
  auto state = std::make_shared<State>();
  try {
    state->device = detail::gloo_devices().front();
    state->context = std::make_shared< ::gloo::rendezvous::Context>(rank, world_size);
    state->context->setTimeout(timeout);
    auto gloo_store = std::make_shared<c10d::ProcessGroupGloo::GlooStore>(store);
    // Gloo takes the store by reference up to the one beside LibTorch 2.6, shared after.
    [&](auto& context) {
      if constexpr (requires { context.connectFullMesh(gloo_store, state->device); }) {
        context.connectFullMesh(gloo_store, state->device);
      } else {
        context.connectFullMesh(*gloo_store, state->device);
      }
    }(*state->context);
    for (int peer = 0; peer < world_size; ++peer) {
      if (peer != rank) state->context->getPair(peer)->setSync(true, /*busyPoll=*/false);
    }
  } catch (const ::gloo::Exception& e) {
    throw std::runtime_error("HostChannel: connecting rank " + std::to_string(rank) + " of " +
                             std::to_string(world_size) + " failed: " + e.what());
  }
  return std::shared_ptr<HostChannel>(new HostChannel(std::move(state)));
}

int HostChannel::rank() const { return state_->context->rank; }
int HostChannel::world_size() const { return state_->context->size; }

std::unique_ptr<HostChannel::Prepared> HostChannel::prepare_allgather(const at::Tensor& input,
                                                                      const at::Tensor& output) {
  check_host_tensor(input, "all-gather input");
  check_host_tensor(output, "all-gather output");
  const std::size_t bytes = input.nbytes();
  if (output.nbytes() != bytes * static_cast<std::size_t>(world_size())) {
    throw std::invalid_argument("HostChannel: all-gather output must hold world_size (" +
                                std::to_string(world_size()) + ") x " + std::to_string(bytes) +
                                " bytes, not " + std::to_string(output.nbytes()));
  }
  using Gather = ::gloo::AllgatherRing<std::uint8_t>;
  std::vector<const std::uint8_t*> in{static_cast<const std::uint8_t*>(input.data_ptr())};
  auto algorithm = std::make_unique<Gather>(
      state_->context, in, static_cast<std::uint8_t*>(output.data_ptr()), static_cast<int>(bytes));
  return std::make_unique<PreparedAlgorithm<Gather> >(state_, std::move(algorithm), "all-gather");
}

std::unique_ptr<HostChannel::Prepared> HostChannel::prepare_broadcast(const at::Tensor& io,
                                                                      int root) {
  check_host_tensor(io, "broadcast tensor");
  if (root < 0 || root >= world_size()) {
    throw std::invalid_argument("HostChannel: broadcast root " + std::to_string(root) +
                                " is not a rank of " + std::to_string(world_size()));
  }
  auto algorithm = std::make_unique<RootBroadcast>(
      *state_->context, static_cast<std::uint8_t*>(io.data_ptr()), io.nbytes(), root);
  return std::make_unique<PreparedAlgorithm<RootBroadcast> >(state_, std::move(algorithm),
                                                             "broadcast");
}

}  // namespace ddp

#endif  // DDP_WITH_HOST_CHANNEL
