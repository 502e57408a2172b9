// DistributedDataParallel against single-process training, with ranks as threads over Gloo.
#include <torch/torch.h>

#include <mutex>

#include "ddp/collectives.h"
#include "ddp/data_parallel.h"
#include "rank_threads.h"
#include "tests/catch.h"

namespace {

constexpr int kWorld = 3;
constexpr int kPerRank = 4;

struct MlpImpl : torch::nn::Module {
  MlpImpl() : fc1(8, 16), fc2(16, 4), side(8, 4) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("side", side);
  }
  // `use_side` lets a test leave a parameter without gradient on some ranks.
  torch::Tensor forward(const torch::Tensor& x, bool use_side = false) {
    auto y = fc2(torch::tanh(fc1(x)));
    return use_side ? y + side(x) : y;
  }
  torch::nn::Linear fc1, fc2, side;
};
TORCH_MODULE(Mlp);

Mlp make_model(std::uint64_t seed) {
  torch::manual_seed(seed);
  return Mlp();
}

// Models are built on the main thread: the global CPU generator is shared by the rank threads.
std::vector<Mlp> make_models(bool distinct) {
  std::vector<Mlp> nets;
  for (int r = 0; r < kWorld; ++r)
    nets.push_back(make_model(distinct ? 1 + static_cast<std::uint64_t>(r) : 1));
  return nets;
}

torch::Tensor global_inputs(int micro) {
  auto gen = at::detail::createCPUGenerator(100 + micro);
  return torch::randn({kWorld * kPerRank, 8}, gen);
}
torch::Tensor global_targets(int micro) {
  auto gen = at::detail::createCPUGenerator(200 + micro);
  return torch::randn({kWorld * kPerRank, 4}, gen);
}
torch::Tensor local(const torch::Tensor& t, int rank) {
  return t.narrow(0, rank * kPerRank, kPerRank);
}

double max_rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

// Parameters of every rank after training, in registration order.
struct Results {
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> params = std::vector<std::vector<torch::Tensor>>(kWorld);
  std::vector<std::vector<torch::Tensor>> grads = std::vector<std::vector<torch::Tensor>>(kWorld);
  void record(int rank, Mlp& m) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& p : m->parameters()) {
      params[static_cast<std::size_t>(rank)].push_back(p.detach().clone());
      grads[static_cast<std::size_t>(rank)].push_back(p.grad().defined() ? p.grad().clone()
                                                                         : torch::Tensor());
    }
  }
};

void check_against_reference(Results& results, Mlp& reference) {
  auto ref = reference->parameters();
  for (int r = 0; r < kWorld; ++r) {
    for (std::size_t i = 0; i < ref.size(); ++i) {
      INFO("rank " << r << " parameter " << i);
      // Bit-identical across ranks.
      REQUIRE(torch::equal(results.params[static_cast<std::size_t>(r)][i], results.params[0][i]));
      CHECK(max_rel_err(results.params[static_cast<std::size_t>(r)][i], ref[i].detach()) <= 1e-5);
    }
  }
}

void run_one_step(std::size_t bucket_cap,
                  std::size_t gather_max = ddp::ReducerOptions{}.gather_max_bytes,
                  bool host_channel = true) {
  Results results;
  auto nets = make_models(/*distinct=*/true);  // they differ until DDP broadcasts rank 0's
  ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
    Mlp net = nets[static_cast<std::size_t>(ctx.rank())];
    ddp::DistributedDataParallel<Mlp> model(net, ctx,
                                            {.bucket_cap_bytes = bucket_cap,
                                             .gather_max_bytes = gather_max,
                                             .host_channel = host_channel});
    ddp::testing::expect(model.uses_host_channel() == host_channel, "host channel as asked");
    if (bucket_cap < 1000)
      ddp::testing::expect(model.reducer().bucket_count() > 2, "several buckets");
    torch::optim::SGD opt(net->parameters(), 0.1);
    auto out = model.forward(local(global_inputs(0), ctx.rank()));
    torch::mse_loss(out, local(global_targets(0), ctx.rank())).backward();
    opt.step();
    ddp::testing::expect(model.reducer().reductions() == 1, "one reduction");
    results.record(ctx.rank(), net);
  });
  Mlp reference = make_model(1);  // rank 0's initial weights
  torch::optim::SGD opt(reference->parameters(), 0.1);
  torch::mse_loss(reference->forward(global_inputs(0)), global_targets(0)).backward();
  opt.step();
  check_against_reference(results, reference);
}

}  // namespace

TEST_CASE("ddp: one step equals single-process training on the whole batch (default buckets)") {
  run_one_step(25u * 1024u * 1024u);
}

TEST_CASE("ddp: one step equals single-process training with many small buckets") {
  run_one_step(256);
}

TEST_CASE("ddp: one step equals single-process training with all-reduce only") {
  run_one_step(25u * 1024u * 1024u, /*gather_max=*/0);
  run_one_step(256, /*gather_max=*/0);
}

TEST_CASE("ddp: one step equals single-process training with gathered and all-reduced buckets") {
  // Buckets of <= 256 B gather (3 ranks x 256 = 768), fc1.w's 512 B bucket all-reduces.
  run_one_step(256, /*gather_max=*/3 * 256);
}

TEST_CASE("ddp: one step equals single-process training with gathers on the process group") {
  run_one_step(25u * 1024u * 1024u, ddp::ReducerOptions{}.gather_max_bytes, /*host_channel=*/false);
  run_one_step(256, /*gather_max=*/3 * 256, /*host_channel=*/false);
}

TEST_CASE("ddp: small CPU buckets gather, larger ones all-reduce, one rank never gathers") {
  Mlp net = make_model(1);
  // Buckets: {fc2.w ... fc1.b} 480 B, {fc1.w} 512 B (see the next test case).
  std::size_t count = 0;
  bool first_gathers = false, second_gathers = true, never_gathers = true;
  ddp::testing::run_ranks(2, [&](ddp::WorkerContext& ctx) {
    if (ctx.rank() != 0) return;
    ddp::GradientReducer reducer(ctx.process_group(), net->parameters(),
                                 {.bucket_cap_bytes = 600, .gather_max_bytes = 2 * 500});
    count = reducer.bucket_count();
    first_gathers = reducer.bucket_gathers(0);
    second_gathers = reducer.bucket_gathers(1);
    ddp::GradientReducer never(ctx.process_group(), net->parameters(),
                               {.bucket_cap_bytes = 600, .gather_max_bytes = 0});
    never_gathers = never.bucket_gathers(0);
  });
  REQUIRE(count == 2);
  CHECK(first_gathers);
  CHECK_FALSE(second_gathers);
  CHECK_FALSE(never_gathers);
  auto single =
      ddp::make_gloo_group(c10::make_intrusive<c10d::HashStore>(), 0, 1, std::chrono::seconds(10));
  ddp::GradientReducer alone(single, net->parameters(), {.bucket_cap_bytes = 600});
  CHECK_FALSE(alone.bucket_gathers(0));
}

TEST_CASE("ddp: buckets hold parameters in reverse order and respect the cap") {
  Mlp net = make_model(1);
  auto hash = c10::make_intrusive<c10d::HashStore>();
  auto group = ddp::make_gloo_group(hash, 0, 1, std::chrono::seconds(10));
  ddp::GradientReducer reducer(group, net->parameters(), {.bucket_cap_bytes = 600});
  // fc1.w 512 B, fc1.b 64, fc2.w 256, fc2.b 16, side.w 128, side.b 16 (registration order).
  std::vector<std::size_t> flat;
  for (std::size_t b = 0; b < reducer.bucket_count(); ++b) {
    auto ps = reducer.bucket_params(b);
    flat.insert(flat.end(), ps.begin(), ps.end());
  }
  CHECK(flat == std::vector<std::size_t>{5, 4, 3, 2, 1, 0});
  // 16 + 128 + 16 + 256 + 64 = 480 bytes fit under 600; fc1.w (512) starts a new bucket.
  REQUIRE(reducer.bucket_count() == 2);
  CHECK(reducer.bucket_params(0) == std::vector<std::size_t>{5, 4, 3, 2, 1});
  CHECK(reducer.bucket_params(1) == std::vector<std::size_t>{0});
}

TEST_CASE("ddp: a parameter without gradient on some ranks gets the average of the others") {
  Results results;
  auto nets = make_models(/*distinct=*/false);
  ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
    Mlp net = nets[static_cast<std::size_t>(ctx.rank())];
    ddp::DistributedDataParallel<Mlp> model(net, ctx, {.bucket_cap_bytes = 256});
    const bool use_side = ctx.rank() == 1;  // only rank 1 touches `side`
    auto out = model.forward(local(global_inputs(0), ctx.rank()), use_side);
    torch::mse_loss(out, local(global_targets(0), ctx.rank())).backward();
    results.record(ctx.rank(), net);
  });
  // Expected: per-rank gradients computed alone, averaged with zeros for unused parameters.
  std::vector<torch::Tensor> expected;
  for (int r = 0; r < kWorld; ++r) {
    Mlp alone = make_model(1);
    torch::mse_loss(alone->forward(local(global_inputs(0), r), r == 1), local(global_targets(0), r))
        .backward();
    auto ps = alone->parameters();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      auto g = ps[i].grad().defined() ? ps[i].grad() : torch::zeros_like(ps[i]);
      if (r == 0)
        expected.push_back(g / kWorld);
      else
        expected[i] += g / kWorld;
    }
  }
  for (int r = 0; r < kWorld; ++r) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO("rank " << r << " parameter " << i);
      const auto& g = results.grads[static_cast<std::size_t>(r)][i];
      REQUIRE(g.defined());
      CHECK(max_rel_err(g, expected[i]) <= 1e-5);
    }
  }
}

TEST_CASE("ddp: no_sync accumulates locally and the next backward averages the sum") {
  Results results;
  auto nets = make_models(/*distinct=*/false);
  ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
    Mlp net = nets[static_cast<std::size_t>(ctx.rank())];
    ddp::DistributedDataParallel<Mlp> model(net, ctx, {.bucket_cap_bytes = 256});
    torch::optim::SGD opt(net->parameters(), 0.1);
    {
      auto guard = model.no_sync();
      torch::mse_loss(model.forward(local(global_inputs(0), ctx.rank())),
                      local(global_targets(0), ctx.rank()))
          .backward();
    }
    ddp::testing::expect(model.reducer().reductions() == 0, "no reduction under no_sync");
    torch::mse_loss(model.forward(local(global_inputs(1), ctx.rank())),
                    local(global_targets(1), ctx.rank()))
        .backward();
    ddp::testing::expect(model.reducer().reductions() == 1, "one reduction after no_sync");
    opt.step();
    results.record(ctx.rank(), net);
  });
  Mlp reference = make_model(1);
  torch::optim::SGD opt(reference->parameters(), 0.1);
  for (int micro = 0; micro < 2; ++micro) {
    torch::mse_loss(reference->forward(global_inputs(micro)), global_targets(micro)).backward();
  }
  opt.step();
  check_against_reference(results, reference);
}

TEST_CASE("collectives: barrier, all_gather_object and metric reductions") {
  std::mutex mutex;
  std::vector<std::vector<nlohmann::json>> gathered(kWorld);
  ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
    ddp::barrier(ctx);
    nlohmann::json mine = {{"rank", ctx.rank()}, {"name", std::string(ctx.rank() + 1, 'x')}};
    auto all = ddp::all_gather_object(ctx, mine);
    using ddp::testing::expect;
    expect(ddp::all_reduce_metric(ctx, ctx.rank() + 1.0, ddp::ReduceOp::kSum) == 6.0, "sum");
    expect(ddp::all_reduce_metric(ctx, ctx.rank() + 1.0, ddp::ReduceOp::kMean) == 2.0, "mean");
    expect(ddp::all_reduce_metric(ctx, ctx.rank() + 1.0, ddp::ReduceOp::kMax) == 3.0, "max");
    expect(ddp::all_reduce_metrics(ctx, {1.0, -ctx.rank() * 1.0}, ddp::ReduceOp::kMin) ==
               std::vector<double>{1.0, -2.0},
           "min");
    std::lock_guard<std::mutex> lock(mutex);
    gathered[static_cast<std::size_t>(ctx.rank())] = all;
  });
  for (const auto& all : gathered) {
    REQUIRE(all.size() == static_cast<std::size_t>(kWorld));
    for (int r = 0; r < kWorld; ++r) {
      CHECK(all[static_cast<std::size_t>(r)]["rank"] == r);
      CHECK(all[static_cast<std::size_t>(r)]["name"] == std::string(r + 1, 'x'));
    }
  }
}

TEST_CASE("ddp: broadcast_tensors copies rank 0's values for mixed dtypes and shapes") {
  std::mutex mutex;
  std::vector<std::vector<torch::Tensor>> seen(kWorld);
  ddp::testing::run_ranks(kWorld, [&](ddp::WorkerContext& ctx) {
    const double r = ctx.rank();
    std::vector<torch::Tensor> state = {
        torch::full({2, 3}, r + 0.5, torch::kFloat),
        torch::full({}, static_cast<std::int64_t>(ctx.rank()) + 7, torch::kLong),  // 0-dim
        torch::full({5}, r - 1.25, torch::kDouble),
        torch::full({3}, ctx.rank() + 1, torch::kUInt8)};
    ddp::broadcast_tensors(ctx.process_group(), state, 0);
    std::lock_guard<std::mutex> lock(mutex);
    seen[static_cast<std::size_t>(ctx.rank())] = state;
  });
  for (const auto& state : seen) {
    CHECK(torch::equal(state[0], torch::full({2, 3}, 0.5, torch::kFloat)));
    CHECK(torch::equal(state[1], torch::full({}, std::int64_t{7}, torch::kLong)));
    CHECK(torch::equal(state[2], torch::full({5}, -1.25, torch::kDouble)));
    CHECK(torch::equal(state[3], torch::full({3}, 1, torch::kUInt8)));
  }
}
