#include "ddp/worker_env.h"

#include <torch/version.h>

#include <map>

#include "tests/catch.h"

namespace {

ddp::EnvLookup from_map(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> torchrun_env() {
  return {{"RANK", "3"},
          {"LOCAL_RANK", "1"},
          {"WORLD_SIZE", "4"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
          {"TORCHELASTIC_RESTART_COUNT", "2"},
          {"TORCHELASTIC_ERROR_FILE", "/tmp/err.json"}};
}

}  // namespace

TEST_CASE("worker env: parses what torchrun and ddprun set") {
  auto env = ddp::parse_worker_env(from_map(torchrun_env()));
  REQUIRE(env.is_ok());
  CHECK(env->rank == 3);
  CHECK(env->local_rank == 1);
  CHECK(env->world_size == 4);
  CHECK(env->local_world_size == 2);
  CHECK(env->master_addr == "node0");
  CHECK(env->master_port == 29500);
  CHECK(env->use_agent_store);
  CHECK(env->restart_count == 2);
  CHECK(env->error_file == "/tmp/err.json");
#if TORCH_VERSION_MAJOR >= 2
  CHECK(env->store_prefix().empty());  // 2.x: a fresh agent store per attempt, no prefix
#else
  CHECK(env->store_prefix() == "/worker/attempt_2");
#endif
}

TEST_CASE("worker env: agent store only for the exact string True, local defaults") {
  auto vars = torchrun_env();
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "true";
  vars.erase("LOCAL_RANK");
  vars.erase("LOCAL_WORLD_SIZE");
  auto env = ddp::parse_worker_env(from_map(vars));
  REQUIRE(env.is_ok());
  CHECK_FALSE(env->use_agent_store);
  CHECK(env->store_prefix().empty());
  CHECK(env->local_world_size == 4);
  CHECK(env->local_rank == 3);
}

TEST_CASE("worker env: missing or malformed variables name the variable and the fix") {
  struct Case {
    std::string var;
    std::optional<std::string> value;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"RANK", std::nullopt, "RANK is not set"},
      {"WORLD_SIZE", "two", "WORLD_SIZE='two' is not an integer"},
      {"RANK", "4", "RANK=4 is out of range [0, 3]"},
      {"MASTER_PORT", "70000", "MASTER_PORT=70000 is out of range"},
      {"MASTER_PORT", "12ab", "not an integer"},
      {"MASTER_ADDR", std::nullopt, "MASTER_ADDR is not set"},
      {"LOCAL_RANK", "-1", "LOCAL_RANK=-1 is out of range"},
      {"TORCHELASTIC_RESTART_COUNT", std::nullopt, "TORCHELASTIC_RESTART_COUNT is not set"},
  };
  for (const auto& c : cases) {
    auto vars = torchrun_env();
    if (c.value) {
      vars[c.var] = *c.value;
    } else {
      vars.erase(c.var);
    }
    auto env = ddp::parse_worker_env(from_map(vars));
    INFO(c.var << " -> " << c.expect);
    REQUIRE_FALSE(env.is_ok());
    CHECK(env.status().code() == ddp::ErrorCode::kInvalidArgument);
    CHECK_THAT(env.status().message(), Catch::Contains(c.expect));
  }
  auto missing = ddp::parse_worker_env(from_map({}));
  REQUIRE_FALSE(missing.is_ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("ddprun"));
}
