// Training checkpoints that survive a worker restart.
//
// File: <dir>/checkpoint.pt, a torch::serialize archive whose top level is exactly what
// torch::save(module) writes (parameter and buffer names without any "module." prefix), so
// plain single-process code loads it with torch::load(module, path). A sub-archive
// "ddp_checkpoint" holds the optimizer state, epoch, step, step within the epoch and every
// rank's CPU RNG state.
//
// save() is a collective: RNG states are gathered to rank 0, rank 0 writes a temporary file and
// renames it over the old one (readers never see a partial file), and all ranks leave only
// after the rename (barrier). load() reads the file on every rank, so <dir> must be visible to
// all ranks (a shared or node-local path on a single node). Errors (unwritable directory,
// corrupt file) throw std::runtime_error / c10::Error naming the path.
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
