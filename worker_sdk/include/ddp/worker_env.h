// The environment a launcher (ddprun or torchrun) gives each worker, parsed and validated.
// Pure: reads variables through a lookup function, so tests need no real environment.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"

namespace ddp {

struct WorkerEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  std::string master_addr;
  std::uint16_t master_port = 0;
  // TORCHELASTIC_USE_AGENT_STORE == "True": every rank is a client of the agent's store (under
  // /worker/attempt_<restart_count> on LibTorch 1.x). Otherwise rank 0 hosts the store itself.
  bool use_agent_store = false;
  int restart_count = 0;   // TORCHELASTIC_RESTART_COUNT, 0 when unset
  std::string error_file;  // TORCHELASTIC_ERROR_FILE, empty when unset
  std::string run_id;      // TORCHELASTIC_RUN_ID, empty when unset

  // The key prefix PyTorch puts in front of every worker-store key for this attempt: as the
  // LibTorch this SDK was built against does (1.x: /worker/attempt_<n> under the agent store;
  // 2.x: none, its agent makes a fresh store per attempt).
  std::string store_prefix() const;
};

// Returns the value of a variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Looks variables up in the process environment (getenv).
EnvLookup process_env();

// Parses RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_USE_AGENT_STORE, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_ERROR_FILE.
// RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are required; LOCAL_RANK defaults to RANK and
// LOCAL_WORLD_SIZE to WORLD_SIZE. Missing or malformed values give kInvalidArgument naming the
// variable, its value and how to fix it (launch with ddprun/torchrun, or export the variable).
Result<WorkerEnv> parse_worker_env(const EnvLookup& lookup);

}  // namespace ddp
