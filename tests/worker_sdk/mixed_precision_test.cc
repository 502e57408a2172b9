// Mixed precision: the autocast guard, and gradients exchanged as bfloat16 with float32 sums.
#include <torch/torch.h>

#include <mutex>

#include "ddp/autocast.h"
#include "ddp/data_parallel.h"
#include "rank_threads.h"
#include "tests/catch.h"

namespace {

// Per-rank gradients of a 3-parameter model, after one DDP backward with `options`.
std::vector<std::vector<torch::Tensor>> ddp_grads(int world, const ddp::DdpOptions& options,
                                                  std::size_t* sent_bytes = nullptr) {
  std::vector<torch::nn::Linear> nets;
  for (int r = 0; r < world; ++r) {
    torch::manual_seed(1);
    nets.emplace_back(torch::nn::LinearOptions(40, 30));
  }
  std::vector<std::vector<torch::Tensor>> grads(static_cast<std::size_t>(world));
  std::mutex mutex;
  ddp::testing::run_ranks(world, [&](ddp::WorkerContext& ctx) {
    auto net = nets[static_cast<std::size_t>(ctx.rank())];
    ddp::DistributedDataParallel<torch::nn::Linear> model(net, ctx, options);
    auto x = torch::linspace(-1, 1, 80).view({2, 40}) * (ctx.rank() + 1);
    model.forward(x).pow(2).sum().backward();
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& p : net->parameters())
      grads[static_cast<std::size_t>(ctx.rank())].push_back(p.grad().clone());
    if (sent_bytes && ctx.rank() == 0) *sent_bytes = model.reducer().sent_bytes_per_step();
  });
  return grads;
}

}  // namespace

TEST_CASE("autocast: bfloat16 on the CPU inside the guard, float32 after, bad pairs refused") {
  torch::nn::Linear fc(4, 3);
  auto x = torch::ones({2, 4});
  {
    ddp::AutocastGuard guard(c10::kCPU, at::kBFloat16);
    CHECK(fc(x).scalar_type() == at::kBFloat16);
  }
  CHECK(fc(x).scalar_type() == at::kFloat);
  CHECK(ddp::check_autocast(c10::kCPU, at::kHalf).message() ==
        "autocast on the CPU supports bfloat16 only, not Half");
  CHECK_THROWS_AS(ddp::AutocastGuard(c10::kCPU, at::kHalf), std::invalid_argument);
  CHECK(ddp::check_autocast(c10::kCUDA, at::kHalf).is_ok());
}

TEST_CASE("bf16 gradients: same on every rank, close to float32, half the bytes") {
  struct Path {
    std::size_t gather_max;
    bool host_channel;
  };
  // split (all-to-all + all-gather), gathering on the host channel, gathering on the group
  for (Path path : {Path{0, true}, Path{1u << 20, true}, Path{1u << 20, false}}) {
    for (int world : {2, 3}) {
      INFO("world " << world << " gather_max " << path.gather_max << " channel "
                    << path.host_channel);
      std::size_t fp32_bytes = 0, bf16_bytes = 0;
      const ddp::DdpOptions base{.gather_max_bytes = path.gather_max,
                                 .host_channel = path.host_channel};
      ddp::DdpOptions bf16 = base;
      bf16.gradient_dtype = at::kBFloat16;
      auto exact = ddp_grads(world, base, &fp32_bytes);
      auto narrow = ddp_grads(world, bf16, &bf16_bytes);
      for (std::size_t i = 0; i < exact[0].size(); ++i) {
        CHECK(narrow[0][i].scalar_type() == at::kFloat);
        for (int r = 1; r < world; ++r) CHECK(torch::equal(narrow[0][i], narrow[r][i]));
        // bfloat16 keeps 8 bits of mantissa: inputs and the result each round once.
        const double err = (narrow[0][i] - exact[0][i]).abs().max().item<double>();
        CHECK(err <= 2e-2 * exact[0][i].abs().max().item<double>());
      }
      if (world == 2) CHECK(bf16_bytes * 2 == fp32_bytes);  // 1230 floats
      CHECK(bf16_bytes < fp32_bytes);
    }
  }
}
