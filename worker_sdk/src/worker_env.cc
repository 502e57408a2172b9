#include "ddp/worker_env.h"

#include <torch/version.h>

#include <charconv>
#include <cstdlib>
#include <limits>

namespace ddp {
namespace {

constexpr const char* kLaunchHint =
    "launch the program with `ddprun --nproc-per-node N --no-python <program>` (or torchrun), "
    "or export the variable yourself";

Result<long long> parse_integer(const EnvLookup& lookup, const std::string& name,
                                std::optional<long long> fallback, long long min_value,
                                long long max_value) {
  std::optional<std::string> text = lookup(name);
  if (!text) {
    if (fallback) return *fallback;
    return invalid_argument(name + " is not set; " + kLaunchHint);
  }
  long long value = 0;
  const char* begin = text->data();
  const char* end = begin + text->size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text->empty() || ec != std::errc() || ptr != end) {
    return invalid_argument(name + "='" + *text + "' is not an integer; set it to a whole number");
  }
  if (value < min_value || value > max_value) {
    return invalid_argument(name + "=" + *text + " is out of range [" + std::to_string(min_value) +
                            ", " + std::to_string(max_value) + "]");
  }
  return value;
}

}  // namespace

std::string WorkerEnv::store_prefix() const {
#if TORCH_VERSION_MAJOR >= 2
  // 2.x's _create_c10d_store: the agent makes a fresh store per attempt, so no prefix.
  return std::string();
#else
  return use_agent_store ? "/worker/attempt_" + std::to_string(restart_count) : std::string();
#endif
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<WorkerEnv> parse_worker_env(const EnvLookup& lookup) {
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  WorkerEnv env;
  auto world = parse_integer(lookup, "WORLD_SIZE", std::nullopt, 1, kMaxInt);
  if (!world) return world.status();
  env.world_size = static_cast<int>(*world);
  auto rank = parse_integer(lookup, "RANK", std::nullopt, 0, env.world_size - 1);
  if (!rank) return rank.status();
  env.rank = static_cast<int>(*rank);
  auto local_world = parse_integer(lookup, "LOCAL_WORLD_SIZE", env.world_size, 1, env.world_size);
  if (!local_world) return local_world.status();
  env.local_world_size = static_cast<int>(*local_world);
  auto local_rank = parse_integer(lookup, "LOCAL_RANK", env.rank % env.local_world_size, 0,
                                  env.local_world_size - 1);
  if (!local_rank) return local_rank.status();
  env.local_rank = static_cast<int>(*local_rank);

  std::optional<std::string> addr = lookup("MASTER_ADDR");
  if (!addr || addr->empty()) {
    return invalid_argument(std::string("MASTER_ADDR is not set; ") + kLaunchHint);
  }
  env.master_addr = *addr;
  auto port = parse_integer(lookup, "MASTER_PORT", std::nullopt, 1, 65535);
  if (!port) return port.status();
  env.master_port = static_cast<std::uint16_t>(*port);

  std::optional<std::string> agent_store = lookup("TORCHELASTIC_USE_AGENT_STORE");
  // PyTorch compares with the exact string "True"; anything else means "rank 0 hosts".
  env.use_agent_store = agent_store && *agent_store == "True";
  auto restarts = parse_integer(lookup, "TORCHELASTIC_RESTART_COUNT", 0, 0, kMaxInt);
  if (!restarts) return restarts.status();
  env.restart_count = static_cast<int>(*restarts);
  if (env.use_agent_store && !lookup("TORCHELASTIC_RESTART_COUNT")) {
    return invalid_argument(
        "TORCHELASTIC_USE_AGENT_STORE=True but TORCHELASTIC_RESTART_COUNT is not set; the store "
        "prefix /worker/attempt_<n> needs it (ddprun and torchrun set both)");
  }
  env.error_file = lookup("TORCHELASTIC_ERROR_FILE").value_or("");
  env.run_id = lookup("TORCHELASTIC_RUN_ID").value_or("");
  return env;
}

}  // namespace ddp
