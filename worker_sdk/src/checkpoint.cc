#include "ddp/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <stdexcept>

#include "ddp/collectives.h"
#include "ddp/state_dict.h"

namespace ddp {
namespace {

constexpr const char* kFileName = "checkpoint.pt";
constexpr const char* kModel = "model_state_dict";
constexpr const char* kOptimizer = "optimizer_state_dict";
constexpr const char* kOptimizerArchive = "optimizer_libtorch";

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

// An optimizer Python has no layout for (not SGD/Adam/AdamW): its LibTorch archive as bytes.
at::Tensor optimizer_archive(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::string bytes;
  archive.save_to([&](const void* data, std::size_t n) {
    bytes.append(static_cast<const char*>(data), n);
    return n;
  });
  return at::tensor(at::ArrayRef<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                               bytes.size()));
}

void load_optimizer_archive(torch::optim::Optimizer& optimizer, const at::Tensor& bytes) {
  torch::serialize::InputArchive archive;
  archive.load_from(static_cast<const char*>(bytes.contiguous().data_ptr()),
                    static_cast<std::size_t>(bytes.numel()));
  optimizer.load(archive);
}

const c10::IValue& field(const c10::impl::GenericDict& doc, const std::string& key,
                         const std::string& path) {
  auto it = doc.find(key);
  if (it == doc.end()) throw std::runtime_error(path + " has no '" + key + "'");
  return it->value();
}

void check(const Status& status, const std::string& path) {
  if (!status) throw std::runtime_error(path + ": " + status.message());
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
    c10::impl::GenericDict doc(c10::StringType::get(), c10::AnyType::get());
    doc.insert(kModel, model_state_dict(model));
    auto opt = optimizer_state_dict(optimizer);
    if (opt) {
      doc.insert(kOptimizer, *opt);
    } else {
      doc.insert(kOptimizerArchive, optimizer_archive(optimizer));
    }
    doc.insert("epoch", state.epoch);
    doc.insert("step", state.step);
    doc.insert("step_in_epoch", state.step_in_epoch);
    doc.insert("world_size", static_cast<std::int64_t>(ctx_.world_size()));
    c10::impl::GenericList states(c10::AnyType::get());
    for (const auto& t : rng) states.push_back(t);
    doc.insert("rng_states", states);
    check(save_python_file(doc, path()), path());
  }
  barrier(ctx_);
}

std::optional<TrainState> Checkpointer::load(torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer) {
  if (!exists()) return std::nullopt;
  const std::string file = path();
  auto value = load_python_file(file);
  check(value.status(), file);
  if (!value->isGenericDict()) throw std::runtime_error(file + " does not hold a dict");
  const auto doc = value->toGenericDict();
  auto model_state = as_state_dict(field(doc, kModel, file), file + " " + kModel);
  check(model_state.status(), file);
  check(load_model_state_dict(model, *model_state), file);
  if (doc.contains(kOptimizer)) {
    check(load_optimizer_state_dict(optimizer, field(doc, kOptimizer, file)), file);
  } else {
    load_optimizer_archive(optimizer, field(doc, kOptimizerArchive, file).toTensor());
  }
  TrainState state;
  state.epoch = field(doc, "epoch", file).toInt();
  state.step = field(doc, "step", file).toInt();
  state.step_in_epoch = field(doc, "step_in_epoch", file).toInt();
  const std::int64_t saved_world = field(doc, "world_size", file).toInt();
  // Same world size: each rank continues its own random stream; otherwise rank 0's.
  const std::int64_t source = saved_world == ctx_.world_size() ? ctx_.rank() : 0;
  const auto rng = field(doc, "rng_states", file).toListRef();
  if (static_cast<std::int64_t>(rng.size()) <= source) {
    throw std::runtime_error(file + " has " + std::to_string(rng.size()) + " RNG states, not " +
                             std::to_string(saved_world));
  }
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle, shared
  generator.set_state(rng[static_cast<std::size_t>(source)].toTensor());
  return state;
}

std::optional<TrainState> Checkpointer::resume_if_restarted(torch::nn::Module& model,
                                                            torch::optim::Optimizer& optimizer,
                                                            bool always) {
  if (!always && ctx_.env().restart_count == 0) return std::nullopt;
  return load(model, optimizer);
}

}  // namespace ddp
