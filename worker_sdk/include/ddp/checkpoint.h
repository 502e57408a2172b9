// Training checkpoints that survive a worker restart, in a file Python reads.
//
// File: <dir>/checkpoint.pt, a torch.save-format dict (ddp/state_dict.h) laid out as PyTorch's
// "general checkpoint" tutorial does, so `torch.load(path)` in Python gives
//   {"model_state_dict": {name: tensor} (no "module." prefix),
//    "optimizer_state_dict": Python's layout (SGD, Adam, AdamW; other optimizers are stored as
//                            "optimizer_libtorch", their LibTorch archive as uint8 bytes),
//    "epoch", "step", "step_in_epoch", "world_size": ints,
//    "rng_states": [every rank's CPU generator state (uint8 tensors)]}
// and `model.load_state_dict(ckpt["model_state_dict"])` loads it into the same architecture.
//
// save() is a collective: RNG states are gathered to rank 0, rank 0 writes a temporary file and
// renames it over the old one (readers never see a partial file), and all ranks leave only
// after the rename (barrier). load() reads the file on every rank, so <dir> must be visible to
// all ranks (a shared or node-local path on a single node). Errors (unwritable directory,
// corrupt file, a checkpoint of another architecture: the message names the first mismatched
// key or shape) throw std::runtime_error naming the path.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ddp/process_group.h"

namespace ddp {

struct TrainState {
  std::int64_t epoch = 0;          // the epoch to run next (or the one in progress)
  std::int64_t step = 0;           // optimizer steps taken in total
  std::int64_t step_in_epoch = 0;  // batches of `epoch` already done
};

class Checkpointer {
 public:
  // `ctx` must outlive the checkpointer. Rank 0 creates `dir` if needed.
  Checkpointer(const WorkerContext& ctx, std::string dir);

  std::string path() const;
  bool exists() const;

  void save(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
            const TrainState& state);

  // Restores model, optimizer and this rank's RNG state; returns the saved state, or nullopt
  // when there is no checkpoint.
  std::optional<TrainState> load(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

  // What a restarted worker calls at start: loads the latest checkpoint when
  // TORCHELASTIC_RESTART_COUNT > 0 (or `always` is set) and one exists.
  std::optional<TrainState> resume_if_restarted(torch::nn::Module& model,
                                                torch::optim::Optimizer& optimizer,
                                                bool always = false);

 private:
  const WorkerContext& ctx_;
  std::string dir_;
};

}  // namespace ddp
