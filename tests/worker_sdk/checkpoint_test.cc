// Checkpoints: written by rank 0 atomically, loadable by plain single-process code (and by
// Python's torch.load, tests/integration/worker_sdk), and a
// faithful resume (model, optimizer, train state, RNG).
#include "ddp/checkpoint.h"

#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "ddp/data_parallel.h"
#include "ddp/state_dict.h"
#include "rank_threads.h"
#include "tests/catch.h"

namespace {

torch::nn::Sequential make_net(std::uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(6, 5), torch::nn::BatchNorm1d(5),
                               torch::nn::ReLU(), torch::nn::Linear(5, 2));
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ddp_ckpt_test_" + std::to_string(::getpid()));
  ~TempDir() { std::filesystem::remove_all(path); }
};

void train_step(torch::nn::Sequential& net, torch::optim::Optimizer& opt, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto x = torch::randn({8, 6}, gen);
  opt.zero_grad();
  net->forward(x).pow(2).mean().backward();
  opt.step();
}

}  // namespace

TEST_CASE("checkpoint: rank 0 writes one file that a plain non-DDP module loads") {
  TempDir dir;
  std::vector<torch::nn::Sequential> nets = {make_net(1), make_net(2)};
  std::vector<torch::Tensor> rank0_params;
  ddp::testing::run_ranks(2, [&](ddp::WorkerContext& ctx) {
    auto net = nets[static_cast<std::size_t>(ctx.rank())];
    ddp::DistributedDataParallel<torch::nn::Sequential> model(net, ctx);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    train_step(net, opt, 5 + static_cast<std::uint64_t>(ctx.rank()));
    ddp::Checkpointer ckpt(ctx, dir.path.string());
    ckpt.save(*net, opt, {.epoch = 2, .step = 17, .step_in_epoch = 3});
    // After save returns on any rank, the file is complete.
    ddp::testing::expect(std::filesystem::exists(ckpt.path()), "checkpoint visible after save");
    if (ctx.rank() == 0) {
      for (const auto& p : net->parameters()) rank0_params.push_back(p.detach().clone());
    }
  });
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    files.push_back(e.path().filename().string());
  }
  CHECK(files == std::vector<std::string>{"checkpoint.pt"});  // no temporary left behind

  // The file is a torch.load-able dict; its model_state_dict loads into a plain module.
  auto doc = ddp::load_python_file((dir.path / "checkpoint.pt").string());
  REQUIRE(doc.is_ok());
  auto state = ddp::as_state_dict(doc->toGenericDict().at("model_state_dict"), "model");
  REQUIRE(state.is_ok());
  auto plain = make_net(99);
  REQUIRE(ddp::load_model_state_dict(*plain, *state).is_ok());
  auto loaded = plain->parameters();
  REQUIRE(loaded.size() == rank0_params.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) CHECK(torch::equal(loaded[i], rank0_params[i]));
  auto names = plain->named_parameters().keys();
  CHECK(names.front() == "0.weight");  // no "module." prefix anywhere
  for (const auto& n : names) CHECK(n.find("module.") == std::string::npos);
}

TEST_CASE("checkpoint: resume restores model, optimizer, train state and RNG") {
  TempDir dir;
  auto net = make_net(3);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::Tensor after_save_draw, after_save_params_step;
  auto resumed_net = make_net(4);
  torch::optim::SGD resumed_opt(resumed_net->parameters(),
                                torch::optim::SGDOptions(0.1).momentum(0.9));
  std::optional<ddp::TrainState> first, second;

  ddp::testing::run_ranks(1, [&](ddp::WorkerContext& ctx) {
    train_step(net, opt, 7);
    ddp::Checkpointer ckpt(ctx, dir.path.string());
    ckpt.save(*net, opt, {.epoch = 1, .step = 9, .step_in_epoch = 4});
    after_save_draw = torch::rand({4});
    train_step(net, opt, 8);  // momentum makes this step depend on the optimizer state
    after_save_params_step = net->parameters()[0].detach().clone();
    // A first attempt (restart count 0) does not resume.
    first = ckpt.resume_if_restarted(*resumed_net, resumed_opt);
  });
  CHECK_FALSE(first.has_value());

  ddp::testing::run_ranks(
      1,
      [&](ddp::WorkerContext& ctx) {
        ddp::Checkpointer ckpt(ctx, dir.path.string());
        torch::rand({100});  // move the RNG away from the saved state
        second = ckpt.resume_if_restarted(*resumed_net, resumed_opt);
      },
      /*restart_count=*/1);
  REQUIRE(second.has_value());
  CHECK(second->epoch == 1);
  CHECK(second->step == 9);
  CHECK(second->step_in_epoch == 4);
  CHECK(torch::equal(torch::rand({4}), after_save_draw));
  train_step(resumed_net, resumed_opt, 8);
  CHECK(torch::equal(resumed_net->parameters()[0], after_save_params_step));
}

TEST_CASE("checkpoint: no file means nothing to resume") {
  TempDir dir;
  auto net = make_net(1);
  torch::optim::SGD opt(net->parameters(), 0.1);
  std::optional<ddp::TrainState> state = ddp::TrainState{};
  ddp::testing::run_ranks(
      1,
      [&](ddp::WorkerContext& ctx) {
        state = ddp::Checkpointer(ctx, dir.path.string()).resume_if_restarted(*net, opt);
      },
      1);
  CHECK_FALSE(state.has_value());
}
