#include "agent/run_setup.h"

#include <filesystem>
#include <set>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

TEST_CASE("run setup: paths, run id and per-attempt launch specs", "[run_setup]") {
  auto dir = std::filesystem::temp_directory_path() / "ddp_run_setup_test";
  std::filesystem::remove_all(dir);
  AgentConfig c;
  c.worker_argv = {"/bin/true", "x"};
  c.nproc_per_node = 2;
  c.job.max_restarts = 3;
  c.log_dir = dir;
  c.standalone = true;
  auto setup = prepare_run(c);
  REQUIRE(setup);
  CHECK(std::filesystem::is_directory(dir));
  CHECK(setup->group.run_id.size() == 36);  // a UUID, as the launcher gives --standalone
  CHECK(setup->group.master_addr == "127.0.0.1");
  CHECK(setup->error_file(1, 0) ==
        std::filesystem::absolute(dir) / "attempt_1" / "0" / "error.json");
  setup->group.master_port = 4242;
  proc::LaunchSpec spec = setup->launch_spec(2, 1);
  CHECK(spec.argv == c.worker_argv);
  setup->worker_argv.push_back("--local_rank=${local_rank}");
  CHECK(setup->launch_spec(2, 1).argv.back() == "--local_rank=1");
  std::set<std::string> env(spec.env.begin(), spec.env.end());
  CHECK(env.contains("TORCHELASTIC_RESTART_COUNT=2"));
  CHECK(env.contains("RANK=1"));
  CHECK(env.contains("MASTER_PORT=4242"));
  CHECK(env.contains("TORCHELASTIC_MAX_RESTARTS=3"));
  CHECK(env.contains("TORCHELASTIC_SIGNALS_TO_HANDLE=SIGTERM,SIGINT,SIGHUP,SIGQUIT"));
  CHECK(env.contains("TORCHELASTIC_ERROR_FILE=" + setup->error_file(2, 1).string()));
  std::filesystem::remove_all(dir);
}

TEST_CASE("run setup keeps a given run id and static master address", "[run_setup]") {
  AgentConfig c;
  c.worker_argv = {"w"};
  c.run_id = "job-7";
  c.master_addr = "10.1.2.3";
  c.log_dir = std::filesystem::temp_directory_path() / "ddp_run_setup_test2";
  auto setup = prepare_run(c);
  REQUIRE(setup);
  CHECK(setup->group.run_id == "job-7");
  CHECK(setup->group.master_addr == "10.1.2.3");
  std::filesystem::remove_all(*c.log_dir);
}

TEST_CASE("run setup: several nodes go to the multi-node agent", "[run_setup]") {
  AgentConfig c;
  c.worker_argv = {"w"};
  CHECK_FALSE(is_multinode(c));
  c.job.max_nodes = 2;
  CHECK(is_multinode(c));
  c.job.min_nodes = 2;
  CHECK(is_multinode(c));
  c.log_dir = std::filesystem::temp_directory_path() / "ddp_run_setup_test3";
  auto setup = prepare_run(c);
  REQUIRE(setup);
  std::filesystem::remove_all(*c.log_dir);
  c.standalone = true;
  c.job.min_nodes = c.job.max_nodes = 1;
  CHECK_FALSE(is_multinode(c));
}

TEST_CASE("run setup refuses what the agent cannot run", "[run_setup]") {
  AgentConfig c;
  c.worker_argv.clear();
  CHECK_FALSE(prepare_run(c));
  c.worker_argv = {"w"};
  c.log_dir = "/proc/self/nope";
  auto bad = prepare_run(c);
  REQUIRE_FALSE(bad);
  CHECK(bad.status().message().find("/proc/self/nope") != std::string::npos);
}

}  // namespace
}  // namespace ddp::agent
