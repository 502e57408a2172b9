#include "agent/workers/worker_env.h"

#include <set>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

GroupContext two_node_group() {
  GroupContext g;
  g.role = "trainer";
  g.local_world_size = 3;
  g.group_rank = 1;
  g.group_world_size = 2;
  g.global_rank_base = 3;
  g.world_size = 6;
  g.master_addr = "10.0.0.1";
  g.master_port = 40123;
  g.restart_count = 2;
  g.max_restarts = 5;
  g.run_id = "job42";
  g.signals_to_handle = "SIGTERM,SIGINT";
  return g;
}

TEST_CASE("worker env sets every torchrun variable", "[worker_env]") {
  EnvMap base{{"PATH", "/bin"}, {"RANK", "stale"}};
  EnvMap env = make_worker_env(base, two_node_group(), 1, "/logs/attempt_2/1/error.json");
  CHECK(env.at("PATH") == "/bin");
  CHECK(env.at("LOCAL_RANK") == "1");
  CHECK(env.at("RANK") == "4");
  CHECK(env.at("GROUP_RANK") == "1");
  CHECK(env.at("ROLE_RANK") == "4");
  CHECK(env.at("ROLE_NAME") == "trainer");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "3");
  CHECK(env.at("WORLD_SIZE") == "6");
  CHECK(env.at("GROUP_WORLD_SIZE") == "2");
  CHECK(env.at("ROLE_WORLD_SIZE") == "6");
  CHECK(env.at("MASTER_ADDR") == "10.0.0.1");
  CHECK(env.at("MASTER_PORT") == "40123");
  CHECK(env.at("TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(env.at("TORCHELASTIC_MAX_RESTARTS") == "5");
  CHECK(env.at("TORCHELASTIC_RUN_ID") == "job42");
  CHECK(env.at("TORCHELASTIC_USE_AGENT_STORE") == "True");
  CHECK(env.at("TORCHELASTIC_ERROR_FILE") == "/logs/attempt_2/1/error.json");
  CHECK(env.at("TORCHELASTIC_SIGNALS_TO_HANDLE") == "SIGTERM,SIGINT");
  CHECK_FALSE(env.contains("NCCL_ASYNC_ERROR_HANDLING"));  // torchrun 2.x sets only the new name
  CHECK(env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1");
  CHECK_FALSE(env.contains("CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("worker env keeps inherited NCCL settings and USE_AGENT_STORE False", "[worker_env]") {
  EnvMap base{{"NCCL_ASYNC_ERROR_HANDLING", "0"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}};
  GroupContext g = two_node_group();
  g.use_agent_store = false;
  EnvMap env = make_worker_env(base, g, 0, "e");
  CHECK(env.at("NCCL_ASYNC_ERROR_HANDLING") == "0");
  CHECK(env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "3");
  CHECK(env.at("TORCHELASTIC_USE_AGENT_STORE") == "False");
}

TEST_CASE("global ranks are unique and follow node then local rank", "[worker_env]") {
  std::set<std::string> ranks;
  for (int node = 0; node < 2; ++node) {
    GroupContext g = two_node_group();
    g.group_rank = node;
    g.global_rank_base = node * 3;
    for (int r = 0; r < 3; ++r) ranks.insert(make_worker_env({}, g, r, "e").at("RANK"));
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3", "4", "5"});
}

TEST_CASE("OMP_NUM_THREADS is 1 only when unset and more than one worker", "[worker_env]") {
  GroupContext g = two_node_group();
  CHECK(sets_omp_num_threads({}, 3));
  CHECK(make_worker_env({}, g, 0, "e").at("OMP_NUM_THREADS") == "1");
  CHECK_FALSE(sets_omp_num_threads({{"OMP_NUM_THREADS", "8"}}, 3));
  CHECK(make_worker_env({{"OMP_NUM_THREADS", "8"}}, g, 0, "e").at("OMP_NUM_THREADS") == "8");
  g.local_world_size = 1;
  CHECK_FALSE(sets_omp_num_threads({}, 1));
  CHECK_FALSE(make_worker_env({}, g, 0, "e").contains("OMP_NUM_THREADS"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES is the whole selection in order", "[worker_env]") {
  GroupContext g = two_node_group();
  g.gpu_ids = {1, 6, 3};
  for (int r = 0; r < 3; ++r) {
    EnvMap env = make_worker_env({{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}}, g, r, "e");
    CHECK(env.at("CUDA_VISIBLE_DEVICES") == "1,6,3");
    CHECK(env.at("LOCAL_RANK") == std::to_string(r));
  }
}

TEST_CASE("virtual local rank gives each worker only its own GPU as device 0", "[worker_env]") {
  GroupContext g = two_node_group();
  g.gpu_ids = {1, 6, 3};
  g.virtual_local_rank = true;
  const char* expected[] = {"1", "6", "3"};
  for (int r = 0; r < 3; ++r) {
    EnvMap env = make_worker_env({}, g, r, "e");
    CHECK(env.at("CUDA_VISIBLE_DEVICES") == expected[r]);
    CHECK(env.at("LOCAL_RANK") == "0");
    CHECK(env.at("RANK") == std::to_string(3 + r));
  }
}

TEST_CASE("virtual local rank without GPUs: LOCAL_RANK 0, device named by the local rank",
          "[worker_env]") {
  GroupContext g = two_node_group();
  g.virtual_local_rank = true;
  for (int r = 0; r < 3; ++r) {
    EnvMap env = make_worker_env({}, g, r, "e");
    CHECK(env.at("CUDA_VISIBLE_DEVICES") == std::to_string(r));  // torchrun's fallback
    CHECK(env.at("LOCAL_RANK") == "0");
  }
}

TEST_CASE("to_envp renders KEY=VALUE", "[worker_env]") {
  auto envp = to_envp({{"A", "1"}, {"B", "x=y"}});
  CHECK(envp == std::vector<std::string>{"A=1", "B=x=y"});
}

}  // namespace
}  // namespace ddp::agent
