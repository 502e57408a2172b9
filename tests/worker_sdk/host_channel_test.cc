// HostChannel and BufferSync with ranks as threads: values, repeated runs, refused tensors,
// and a peer that leaves or stalls (the others throw instead of hanging).
#include "ddp/host_channel.h"

#include <torch/torch.h>

#include <csignal>
#include <future>
#include <mutex>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "ddp/buffer_sync.h"
#include "ddp/collectives.h"
#include "rank_threads.h"
#include "tests/catch.h"

namespace {

using ddp::testing::expect;

std::shared_ptr<ddp::HostChannel> connect(ddp::WorkerContext& ctx, const std::string& prefix,
                                          std::chrono::milliseconds timeout) {
  return ddp::HostChannel::connect(c10::make_intrusive<c10d::PrefixStore>(prefix, ctx.store()),
                                   ctx.rank(), ctx.world_size(), timeout);
}

}  // namespace

TEST_CASE("host channel: all-gather and broadcast give every rank the same bytes, run after run") {
  REQUIRE(ddp::HostChannel::available());
  constexpr int kWorld = 3;
  ddp::testing::run_ranks(kWorld, [](ddp::WorkerContext& ctx) {
    auto channel = ctx.host_channel();
    expect(channel == ctx.host_channel(), "one channel per context");
    expect(channel->rank() == ctx.rank() && channel->world_size() == kWorld, "rank and size");
    auto input = torch::empty({5}, torch::kFloat);
    auto output = torch::empty({kWorld, 5}, torch::kFloat);
    auto gather = channel->prepare_allgather(input, output);
    auto io = torch::empty({2, 2}, torch::kDouble);
    auto broadcast = channel->prepare_broadcast(io, /*root=*/1);
    for (int round = 0; round < 3; ++round) {
      input.copy_(torch::arange(5, torch::kFloat) + 100.0 * ctx.rank() + round);
      gather->run();
      for (int r = 0; r < kWorld; ++r) {
        expect(torch::equal(output[r], torch::arange(5, torch::kFloat) + 100.0 * r + round),
               "rank " + std::to_string(r) + "'s slice in round " + std::to_string(round));
      }
      io.fill_(ctx.rank() * 10.0 + round + 0.25);
      broadcast->run();
      expect(torch::equal(io, torch::full({2, 2}, 10.0 + round + 0.25, torch::kDouble)),
             "root 1's values in round " + std::to_string(round));
    }
  });
}

TEST_CASE("host channel: tensors it cannot use are refused with the reason") {
  ddp::testing::run_ranks(2, [](ddp::WorkerContext& ctx) {
    auto channel = ctx.host_channel();
    // Nothing below talks to the peer: without this, a rank could close its channel (return)
    // while the other still completes its side of the connection ("Connection closed by peer").
    ddp::barrier(ctx);
    auto matrix = torch::zeros({4, 4});
    auto check_throws = [](auto&& call, const std::string& needle) {
      try {
        call();
      } catch (const std::invalid_argument& e) {
        expect(std::string(e.what()).find(needle) != std::string::npos,
               std::string("message names the problem: ") + e.what());
        return;
      }
      throw std::runtime_error("expected std::invalid_argument mentioning " + needle);
    };
    check_throws(
        [&] {
          channel->prepare_allgather(matrix.t(), torch::zeros({2, 4, 4}));
        },
        "contiguous CPU tensor");
    check_throws(
        [&] {
          channel->prepare_allgather(matrix, torch::zeros({3, 4, 4}));
        },
        "world_size (2) x 64 bytes");
    check_throws([&] { channel->prepare_broadcast(matrix, 2); }, "root 2 is not a rank");
  });
}

TEST_CASE("host channel: a peer that leaves makes the other's run throw instead of hang") {
  std::signal(SIGPIPE, SIG_IGN);  // as ddp::init() does
  ddp::testing::run_ranks(2, [](ddp::WorkerContext& ctx) {
    auto channel = connect(ctx, "leaves", std::chrono::seconds(60));
    auto input = torch::ones({1000});
    auto output = torch::empty({2, 1000});
    auto gather = channel->prepare_allgather(input, output);
    gather->run();  // both present once
    if (ctx.rank() == 1) {
      gather.reset();
      channel.reset();  // closes rank 1's sockets
      return;
    }
    try {
      for (int i = 0; i < 100; ++i) gather->run();
    } catch (const std::runtime_error& e) {
      expect(std::string(e.what()).find("all-gather on rank 0 failed") != std::string::npos,
             std::string("message: ") + e.what());
      return;
    }
    throw std::runtime_error("rank 0 ran an all-gather without its peer");
  });
}

TEST_CASE("host channel: a peer that stalls past the timeout makes the other's run throw") {
  std::promise<void> failed;
  auto failed_seen = failed.get_future().share();
  ddp::testing::run_ranks(2, [&](ddp::WorkerContext& ctx) {
    auto channel = connect(ctx, "stalls", std::chrono::milliseconds(300));
    auto io = torch::zeros({16});
    auto broadcast = channel->prepare_broadcast(io, 0);
    if (ctx.rank() == 1) {
      // Stays connected but never runs; leaves once rank 0 has given up.
      expect(failed_seen.wait_for(std::chrono::seconds(60)) == std::future_status::ready,
             "rank 0 gave up within 60 s");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      broadcast->run();
    } catch (const std::runtime_error&) {
      failed.set_value();
      expect(std::chrono::steady_clock::now() - start < std::chrono::seconds(30),
             "gave up near the 300 ms timeout");
      return;
    }
    failed.set_value();
    throw std::runtime_error("rank 0 broadcast to a rank that never took part");
  });
}

TEST_CASE("buffer sync: rank 0's buffers reach every rank over the channel and the group") {
  constexpr int kWorld = 3;
  for (bool use_channel : {true, false}) {
    INFO("host channel " << use_channel);
    std::mutex mutex;
    std::vector<std::vector<torch::Tensor>> seen(kWorld);
    ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
      ddp::BufferSync sync(ctx.process_group(), use_channel ? ctx.host_channel() : nullptr);
      for (int round = 0; round < 2; ++round) {
        const double r = ctx.rank() + round;
        std::vector<torch::Tensor> state = {
            torch::full({3}, r + 0.5, torch::kFloat),
            torch::full({}, static_cast<std::int64_t>(r) + 7, torch::kLong),  // 0-dim
            torch::full({2, 5}, r - 1.25, torch::kDouble),
            torch::full({3}, ctx.rank() + 1, torch::kUInt8)};
        sync.sync(state);
        std::lock_guard<std::mutex> lock(mutex);
        seen[static_cast<std::size_t>(ctx.rank())] = state;
      }
      expect(sync.channel_syncs() == (use_channel ? 2 : 0), "syncs on the channel");
    });
    for (const auto& state : seen) {  // round 1 of rank 0
      CHECK(torch::equal(state[0], torch::full({3}, 1.5, torch::kFloat)));
      CHECK(torch::equal(state[1], torch::full({}, std::int64_t{8}, torch::kLong)));
      CHECK(torch::equal(state[2], torch::full({2, 5}, -0.25, torch::kDouble)));
      CHECK(torch::equal(state[3], torch::full({3}, 1, torch::kUInt8)));
    }
  }
}
