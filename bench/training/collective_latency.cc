// Latency of the small collectives DDP runs every step, through c10d's ProcessGroupGloo and
// through the worker SDK's HostChannel, side by side between the ranks of one ddprun job:
//
//   ddprun --standalone --nproc-per-node 2 --no-python build/bin/collective_latency
//       [--floats 20000] [--iters 500] [--rounds 3]
//
// Each round times, in this order, --iters calls of: all-gather of --floats floats through
// the process group, the same through the host channel, broadcast of the same from rank 0
// through each, and a process-group all-reduce. Rank 0 prints one line per round
// ("round R <name> <microseconds per call> ...") and the best round of each at the end.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ddp/collectives.h"
#include "ddp/host_channel.h"
#include "ddp/process_group.h"

namespace {

using Clock = std::chrono::steady_clock;

double micros_per_call(int iters, const std::function<void()>& call) {
  call();  // first call outside the timing (connection warm-up)
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) call();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
}

int run(std::int64_t floats, int iters, int rounds) {
  auto ctx_or = ddp::init();
  if (!ctx_or) {
    std::fprintf(stderr, "collective_latency: %s\n", ctx_or.status().to_string().c_str());
    return 1;
  }
  ddp::WorkerContext& ctx = **ctx_or;
  const auto& group = ctx.process_group();
  const int world = ctx.world_size();
  auto channel = ctx.host_channel();

  at::Tensor input = torch::full({floats}, static_cast<float>(ctx.rank()));
  std::vector<at::Tensor> pg_outputs;
  for (int r = 0; r < world; ++r) pg_outputs.push_back(torch::empty({floats}));
  at::Tensor channel_output = torch::empty({world, floats});
  at::Tensor broadcast_io = torch::zeros({floats});
  auto channel_gather = channel->prepare_allgather(input, channel_output);
  auto channel_broadcast = channel->prepare_broadcast(broadcast_io, 0);

  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"process_group_allgather",
       [&] {
         std::vector<at::Tensor> in{input};
         std::vector<std::vector<at::Tensor>> out{pg_outputs};
         group->allgather(out, in)->wait();
       }},
      {"host_channel_allgather", [&] { channel_gather->run(); }},
      {"process_group_broadcast",
       [&] {
         std::vector<at::Tensor> io{broadcast_io};
         group->broadcast(io)->wait();
       }},
      {"host_channel_broadcast", [&] { channel_broadcast->run(); }},
      {"process_group_allreduce",
       [&] {
         std::vector<at::Tensor> io{input.clone()};
         group->allreduce(io)->wait();
       }},
  };
  std::map<std::string, double> best;
  for (int round = 1; round <= rounds; ++round) {
    std::string line = "round " + std::to_string(round);
    for (const auto& [name, call] : cases) {
      const double us = micros_per_call(iters, call);
      auto it = best.find(name);
      if (it == best.end() || us < it->second) best[name] = us;
      char cell[96];
      std::snprintf(cell, sizeof cell, " %s %.1f", name.c_str(), us);
      line += cell;
    }
    if (ctx.is_rank0()) std::printf("%s\n", line.c_str());
  }
  if (ctx.is_rank0()) {
    std::printf("best of %d rounds, %d ranks, %lld floats, us per call:", rounds, world,
                static_cast<long long>(floats));
    for (const auto& [name, call] : cases) std::printf(" %s %.1f", name.c_str(), best[name]);
    std::printf("\n");
  }
  ddp::barrier(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t floats = 20000;
  int iters = 500, rounds = 3;
  CLI::App app{"small-collective latency: process group vs host channel"};
  app.add_option("--floats", floats, "elements per rank")->check(CLI::PositiveNumber);
  app.add_option("--iters", iters, "calls per timing")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return run(floats, iters, rounds);
}
