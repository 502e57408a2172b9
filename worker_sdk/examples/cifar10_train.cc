// A ResNet-style CIFAR-10 classifier trained data-parallel with the worker SDK.
//
//   ddprun --nproc-per-node 2 --no-python build/bin/cifar10_train --epochs 3
//
// --data DIR reads CIFAR-10's binary batches (DIR/data_batch_*.bin: 1 label byte + 3072 pixel
// bytes per record); without it a learnable synthetic set is generated from --seed. Rank 0
// prints one line per epoch: loss, accuracy and samples/s over all ranks. With
// --checkpoint-dir a checkpoint is written after every epoch (and every --checkpoint-every
// steps); a restarted worker (TORCHELASTIC_RESTART_COUNT > 0) resumes from it. Checkpoints and
// --save-model files are torch.load-able state_dicts; --init-from loads one Python wrote.
// --autocast bf16 runs the forward pass under bfloat16 autocast; --grad-dtype bf16 sends the
// gradients as bfloat16 (summed in float32). Without ddprun:
//
//   build/bin/cifar10_train --spawn 2 --epochs 3      (--nodes N --nr I --master-addr/port
//                                                      for one such driver per node)
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ddp/autocast.h"
#include "ddp/checkpoint.h"
#include "ddp/collectives.h"
#include "ddp/data_parallel.h"
#include "ddp/error_file.h"
#include "ddp/sampler.h"
#include "ddp/spawn.h"
#include "ddp/state_dict.h"

namespace {

struct Flags {
  int epochs = 3;
  int batch_size = 64;
  double lr = 0.05;
  std::string data;
  std::string checkpoint_dir;
  std::uint64_t seed = 0;
  std::int64_t synthetic_samples = 2048;
  std::int64_t checkpoint_every = 0;
  int width = 16;
  int threads = 0;
  std::size_t bucket_kib = 25 * 1024;  // DdpOptions::bucket_cap_bytes, in KiB
  bool broadcast_buffers = true;
  std::size_t gather_max_kib = ddp::ReducerOptions{}.gather_max_bytes / 1024;
  bool host_channel = true;              // DdpOptions::host_channel
  std::string autocast = "off";          // off | bf16 | fp16 (CUDA)
  std::string grad_dtype = "fp32";       // fp32 | bf16
  int stall_rank = -1;                   // hang tests: this rank stalls at stall_step ...
  std::int64_t stall_step = 0;           // ... of the first attempt (docs/hangs.md)
  std::string save_model;                // rank 0 writes the final state_dict here
  std::string init_from;                 // a state_dict (e.g. from Python) to start from
  ddp::SpawnOptions spawn{.nprocs = 0};  // nprocs > 0: start the workers ourselves
};

struct Dataset {
  torch::Tensor images;  // [N, 3, 32, 32] float, normalized
  torch::Tensor labels;  // [N] int64
};

constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;

Dataset load_cifar10(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("data_batch_", 0) == 0 && entry.path().extension() == ".bin") {
      files.push_back(entry.path());
    }
  }
  if (files.empty()) {
    throw std::runtime_error("no data_batch_*.bin files in " + dir +
                             "; pass the directory of CIFAR-10's binary version");
  }
  std::sort(files.begin(), files.end());
  std::vector<std::uint8_t> bytes;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
    if (data.empty() || data.size() % kRecordBytes != 0) {
      throw std::runtime_error(file.string() + " has " + std::to_string(data.size()) +
                               " bytes, not a multiple of the 3073-byte CIFAR-10 record");
    }
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  const std::int64_t n = static_cast<std::int64_t>(bytes.size()) / kRecordBytes;
  auto raw = torch::from_blob(bytes.data(), {n, kRecordBytes}, torch::kUInt8).clone();
  Dataset d;
  d.labels = raw.select(1, 0).to(torch::kLong);
  if (d.labels.max().item<std::int64_t>() > 9) {
    throw std::runtime_error("label > 9 in " + dir +
                             ": not CIFAR-10 (cifar-100 has 2 label bytes)");
  }
  d.images = raw.narrow(1, 1, 3072)
                 .to(torch::kFloat)
                 .div_(255.0)
                 .sub_(0.5)
                 .div_(0.25)
                 .view({n, 3, 32, 32});
  return d;
}

// Each class is a fixed random pattern; samples are that pattern plus noise.
Dataset synthetic(std::int64_t n, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto templates = torch::randn({10, 3, 32, 32}, gen);
  Dataset d;
  d.labels = torch::randint(0, 10, {n}, gen, torch::kLong);
  d.images = templates.index_select(0, d.labels) + 1.5 * torch::randn({n, 3, 32, 32}, gen);
  return d;
}

struct BlockImpl : torch::nn::Module {
  BlockImpl(int in, int out, int stride)
      : conv1(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)),
        bn1(out),
        conv2(torch::nn::Conv2dOptions(out, out, 3).padding(1).bias(false)),
        bn2(out) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (stride != 1 || in != out) {
      shortcut = register_module(
          "shortcut",
          torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (shortcut ? shortcut->forward(x) : x));
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Conv2d shortcut{nullptr};
};
TORCH_MODULE(Block);

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int w)
      : stem(torch::nn::Conv2dOptions(3, w, 3).stride(2).padding(1).bias(false)),
        bn(w),
        block1(w, w, 1),
        block2(w, 2 * w, 2),
        fc(2 * w, 10) {
    register_module("stem", stem);
    register_module("bn", bn);
    register_module("block1", block1);
    register_module("block2", block2);
    register_module("fc", fc);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn(stem(x)));  // 16x16
    y = block2(block1(y));              // 8x8
    return fc(y.mean({2, 3}));
  }
  torch::nn::Conv2d stem;
  torch::nn::BatchNorm2d bn;
  Block block1, block2;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

int run(const Flags& flags) {
  if (flags.threads > 0) torch::set_num_threads(flags.threads);
  auto ctx_or = ddp::init();
  if (!ctx_or) throw std::runtime_error(ctx_or.status().to_string());
  ddp::WorkerContext& ctx = **ctx_or;

  torch::manual_seed(flags.seed);  // same initial weights everywhere (rank 0's win anyway)
  Dataset data = flags.data.empty() ? synthetic(flags.synthetic_samples, flags.seed)
                                    : load_cifar10(flags.data);
  Net net(flags.width);
  if (!flags.init_from.empty()) {
    ddp::Status loaded = ddp::load_state_dict_file(*net, flags.init_from);
    if (!loaded) throw std::runtime_error(loaded.to_string());
    ddp::log_rank0(ctx, "initialised from " + flags.init_from);
  }
  net->to(ctx.device());  // cuda:LOCAL_RANK under NCCL, else the CPU
  std::optional<c10::ScalarType> autocast;
  if (flags.autocast != "off") autocast = flags.autocast == "bf16" ? at::kBFloat16 : at::kHalf;
  torch::optim::SGD optimizer(net->parameters(),
                              torch::optim::SGDOptions(flags.lr).momentum(0.9).weight_decay(5e-4));

  ddp::TrainState state;
  std::unique_ptr<ddp::Checkpointer> checkpointer;
  if (!flags.checkpoint_dir.empty()) {
    checkpointer = std::make_unique<ddp::Checkpointer>(ctx, flags.checkpoint_dir);
    if (auto resumed = checkpointer->resume_if_restarted(*net, optimizer)) {
      state = *resumed;
      ddp::log_rank0(ctx, "resumed from " + checkpointer->path() + " at epoch " +
                              std::to_string(state.epoch + 1) + " step " +
                              std::to_string(state.step_in_epoch));
    }
  }
  ddp::DistributedDataParallel<Net> model(
      net, ctx,
      ddp::DdpOptions{.bucket_cap_bytes = flags.bucket_kib * 1024,
                      .broadcast_buffers = flags.broadcast_buffers,
                      .gather_max_bytes = flags.gather_max_kib * 1024,
                      .host_channel = flags.host_channel,
                      .gradient_dtype = flags.grad_dtype == "bf16" ? at::kBFloat16 : at::kFloat});

  const std::int64_t n = data.images.size(0);
  ddp::DistributedSampler sampler({.dataset_size = n,
                                   .num_replicas = ctx.world_size(),
                                   .rank = ctx.rank(),
                                   .shuffle = true,
                                   .seed = flags.seed,
                                   .drop_last = true});
  const std::int64_t per_rank = sampler.num_samples();
  const std::int64_t batches = per_rank / flags.batch_size;
  if (batches == 0) {
    throw std::invalid_argument("each rank has " + std::to_string(per_rank) +
                                " samples, fewer than --batch-size " +
                                std::to_string(flags.batch_size) + "; lower --batch-size");
  }
  ddp::log_rank0(
      ctx, "training on " + std::to_string(n) + " samples, " + std::to_string(ctx.world_size()) +
               " workers, " + std::to_string(batches) + " batches of " +
               std::to_string(flags.batch_size) + " per worker per epoch" +
               (model.uses_host_channel() ? ", small collectives on the host channel" : ""));
  ddp::log_rank0(ctx, "gradients as " + flags.grad_dtype + ", " +
                          std::to_string(model.reducer().sent_bytes_per_step()) +
                          " bytes sent per step per worker; autocast " + flags.autocast);

  for (std::int64_t epoch = state.epoch; epoch < flags.epochs; ++epoch) {
    sampler.set_epoch(epoch);
    auto order = torch::tensor(sampler.indices(), torch::kLong);
    model.module()->train();
    double loss_sum = 0, correct = 0, seen = 0;
    auto start = std::chrono::steady_clock::now();
    const std::int64_t first = epoch == state.epoch ? state.step_in_epoch : 0;
    for (std::int64_t b = first; b < batches; ++b) {
      auto idx = order.narrow(0, b * flags.batch_size, flags.batch_size);
      auto x = data.images.index_select(0, idx).to(ctx.device());
      auto y = data.labels.index_select(0, idx).to(ctx.device());
      if (ctx.rank() == flags.stall_rank && state.step == flags.stall_step &&
          ctx.env().restart_count == 0) {
        std::this_thread::sleep_for(std::chrono::hours(1));  // --stall-rank: a hung rank
      }
      optimizer.zero_grad();
      torch::Tensor logits, loss;
      {
        std::optional<ddp::AutocastGuard> guard;
        if (autocast) guard.emplace(ctx.device().type(), *autocast);
        logits = model.forward(x);
        loss = torch::nn::functional::cross_entropy(logits, y);
      }
      loss.backward();
      optimizer.step();
      ++state.step;
      loss_sum += loss.item<double>() * flags.batch_size;
      correct += logits.argmax(1).eq(y).sum().item<double>();
      seen += flags.batch_size;
      if (checkpointer && flags.checkpoint_every > 0 && (b + 1) % flags.checkpoint_every == 0 &&
          b + 1 < batches) {
        checkpointer->save(*net, optimizer, {epoch, state.step, b + 1});
        ddp::log_rank0(ctx, "checkpoint epoch " + std::to_string(epoch + 1) + " step " +
                                std::to_string(b + 1));
      }
    }
    auto totals = ddp::all_reduce_metrics(ctx, {loss_sum, correct, seen}, ddp::ReduceOp::kSum);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char line[256];
    std::snprintf(line, sizeof line, "epoch %lld/%d loss %.4f accuracy %.4f samples/s %.1f",
                  static_cast<long long>(epoch + 1), flags.epochs, totals[0] / totals[2],
                  totals[1] / totals[2], totals[2] / seconds);
    ddp::log_rank0(ctx, line);
    if (checkpointer) checkpointer->save(*net, optimizer, {epoch + 1, state.step, 0});
  }
  if (!flags.save_model.empty() && ctx.is_rank0()) {
    ddp::Status saved = ddp::save_python_file(ddp::model_state_dict(*net), flags.save_model);
    if (!saved) throw std::runtime_error(saved.to_string());
    ddp::log_rank0(ctx, "saved the model's state_dict to " + flags.save_model);
  }
  ddp::barrier(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ddp::install_error_handler();
  Flags flags;
  CLI::App app{"ResNet-style CIFAR-10 classifier trained with the ddprun worker SDK"};
  app.add_option("--epochs", flags.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", flags.batch_size, "batch size per worker")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr", flags.lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--data", flags.data, "directory with CIFAR-10 data_batch_*.bin (else synthetic)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--checkpoint-dir", flags.checkpoint_dir, "where checkpoint.pt is written");
  app.add_option("--seed", flags.seed, "seed for weights, data order and synthetic data");
  app.add_option("--synthetic-samples", flags.synthetic_samples, "size of the synthetic set")
      ->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-every", flags.checkpoint_every,
                 "also checkpoint every N steps within an epoch (0: only at epoch ends)");
  app.add_option("--width", flags.width, "channels of the first stage")->check(CLI::PositiveNumber);
  app.add_option("--threads", flags.threads, "intra-op threads (0: OMP_NUM_THREADS/default)");
  app.add_option("--bucket-kib", flags.bucket_kib, "gradient all-reduce bucket size in KiB")
      ->check(CLI::PositiveNumber);
  app.add_flag("!--no-broadcast-buffers", flags.broadcast_buffers,
               "do not broadcast rank 0's batch-norm statistics before each forward");
  app.add_option("--gather-max-kib", flags.gather_max_kib,
                 "reduce buckets of at most this many KiB x world size by all-gather + sum "
                 "(0: always all-reduce)");
  app.add_flag("!--no-host-channel", flags.host_channel,
               "run small CPU collectives through the process group, not the synchronous "
               "host channel");
  app.add_option("--autocast", flags.autocast,
                 "forward pass under autocast: off, bf16, fp16 (CUDA)")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}));
  app.add_option("--grad-dtype", flags.grad_dtype,
                 "dtype gradients are exchanged in (bf16: half the bytes, summed in float32)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--stall-rank", flags.stall_rank,
                 "hang tests: this rank sleeps before step --stall-step of the first attempt");
  app.add_option("--stall-step", flags.stall_step, "see --stall-rank (a global step count)");
  app.add_option("--save-model", flags.save_model, "write the final state_dict (torch.load-able)");
  app.add_option("--init-from", flags.init_from, "start from a state_dict file (torch.save)")
      ->check(CLI::ExistingFile);
  app.add_option("--spawn", flags.spawn.nprocs,
                 "start this many workers on this node without ddprun (mp.spawn's --gpus)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nodes", flags.spawn.nodes, "with --spawn: number of nodes")
      ->check(CLI::PositiveNumber);
  app.add_option("--nr", flags.spawn.node_rank, "with --spawn: this node's rank")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--master-addr", flags.spawn.master_addr, "with --spawn: node 0's address");
  app.add_option("--master-port", flags.spawn.master_port,
                 "with --spawn: node 0's store port (0: any free port, single node)");
  CLI11_PARSE(app, argc, argv);
  if (flags.autocast != "off") {  // refuse a dtype the device cannot autocast, before starting
    ddp::Status ok = ddp::check_autocast(ddp::built_with_nccl() ? c10::kCUDA : c10::kCPU,
                                         flags.autocast == "bf16" ? at::kBFloat16 : at::kHalf);
    if (!ok) {
      std::fprintf(stderr, "cifar10_train: %s\n", ok.message().c_str());
      return 2;
    }
  }
  if (flags.spawn.nprocs > 0) return ddp::spawn(flags.spawn, [&] { return run(flags); });
  return run(flags);
}
