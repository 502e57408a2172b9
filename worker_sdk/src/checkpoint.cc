#include "ddp/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "ddp/collectives.h"

namespace ddp {
namespace {

constexpr const char* kFileName = "checkpoint.pt";
constexpr const char* kSection = "ddp_checkpoint";

at::Tensor scalar(std::int64_t v) { return at::full({1}, v, at::TensorOptions().dtype(at::kLong)); }

std::int64_t read_scalar(torch::serialize::InputArchive& archive, const std::string& key) {
  at::Tensor t;
  archive.read(key, t);
  return t.item<std::int64_t>();
}

// Every rank's CPU generator state, gathered on all ranks (element i = rank i).
std::vector<at::Tensor> gather_rng_states(const WorkerContext& ctx) {
  at::Tensor mine = at::detail::getDefaultCPUGenerator().get_state();
  std::vector<at::Tensor> input{mine.to(ctx.device())};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < ctx.world_size(); ++r) output[0].push_back(at::empty_like(input[0]));
  ctx.process_group()->allgather(output, input)->wait();
  std::vector<at::Tensor> states;
  for (auto& t : output[0]) states.push_back(t.cpu());
  return states;
}

}  // namespace

Checkpointer::Checkpointer(const WorkerContext& ctx, std::string dir)
    : ctx_(ctx), dir_(std::move(dir)) {
  if (dir_.empty()) throw std::invalid_argument("Checkpointer: the checkpoint directory is empty");
  if (ctx_.is_rank0()) std::filesystem::create_directories(dir_);
}

std::string Checkpointer::path() const {
  return (std::filesystem::path(dir_) / kFileName).string();
}

bool Checkpointer::exists() const { return std::filesystem::exists(path()); }

void Checkpointer::save(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                        const TrainState& state) {
  std::vector<at::Tensor> rng = gather_rng_states(ctx_);
  if (ctx_.is_rank0()) {
    torch::serialize::OutputArchive archive;
    model.save(archive);
    torch::serialize::OutputArchive extra;
    extra.write("epoch", scalar(state.epoch));
    extra.write("step", scalar(state.step));
    extra.write("step_in_epoch", scalar(state.step_in_epoch));
    extra.write("world_size", scalar(ctx_.world_size()));
    for (std::size_t r = 0; r < rng.size(); ++r) extra.write("rng_" + std::to_string(r), rng[r]);
    torch::serialize::OutputArchive opt_archive;
    optimizer.save(opt_archive);
    extra.write("optimizer", opt_archive);
    archive.write(kSection, extra);
    const std::string final_path = path();
    const std::string tmp = final_path + ".tmp." + std::to_string(getpid());
    archive.save_to(tmp);
    std::error_code ec;
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) {
      throw std::runtime_error("cannot rename checkpoint " + tmp + " to " + final_path + ": " +
                               ec.message());
    }
  }
  barrier(ctx_);
}

std::optional<TrainState> Checkpointer::load(torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer) {
  if (!exists()) return std::nullopt;
  torch::serialize::InputArchive archive;
  archive.load_from(path());
  model.load(archive);
  torch::serialize::InputArchive extra;
  archive.read(kSection, extra);
  TrainState state;
  state.epoch = read_scalar(extra, "epoch");
  state.step = read_scalar(extra, "step");
  state.step_in_epoch = read_scalar(extra, "step_in_epoch");
  const std::int64_t saved_world = read_scalar(extra, "world_size");
  // Same world size: each rank continues its own random stream; otherwise rank 0's.
  const std::int64_t source = saved_world == ctx_.world_size() ? ctx_.rank() : 0;
  at::Tensor rng;
  extra.read("rng_" + std::to_string(source), rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle, shared
  generator.set_state(rng);
  torch::serialize::InputArchive opt_archive;
  extra.read("optimizer", opt_archive);
  optimizer.load(opt_archive);
  return state;
}

std::optional<TrainState> Checkpointer::resume_if_restarted(torch::nn::Module& model,
                                                            torch::optim::Optimizer& optimizer,
                                                            bool always) {
  if (!always && ctx_.env().restart_count == 0) return std::nullopt;
  return load(model, optimizer);
}

}  // namespace ddp
