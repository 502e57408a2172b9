// Slurm environment derivation: which list, rank, run id and GPUs a node gets.
#include "launcher/cluster/slurm_environment.h"

#include "tests/catch.h"

using namespace ddp::launcher::cluster;

namespace {

Environment job(Environment extra = {}) {
  Environment env{{"SLURM_JOB_ID", "4242"},
                  {"SLURM_JOB_NODELIST", "node[01-04,07],gpu-a"},
                  {"SLURM_JOB_NUM_NODES", "6"},
                  {"SLURM_NNODES", "6"},
                  {"SLURM_NODEID", "2"}};
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

ClusterContext ok(const Environment& env, const std::string& hostname = "elsewhere") {
  auto r = slurm_context(env, hostname);
  INFO(r.status().to_string());
  REQUIRE(r);
  return *r;
}

std::string error(const Environment& env, const std::string& hostname = "elsewhere") {
  auto r = slurm_context(env, hostname);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  return r.status().message();
}

}  // namespace

TEST_CASE("a job's nodes, rank, endpoint and run id", "[cluster][slurm]") {
  CHECK(in_slurm_job(job()));
  CHECK_FALSE(in_slurm_job({{"PATH", "/bin"}}));
  CHECK(in_slurm_job({{"SLURM_JOBID", "1"}}));
  auto c = ok(job());
  CHECK(c.scheduler == "slurm");
  CHECK(c.hosts ==
        std::vector<std::string>{"node01", "node02", "node03", "node04", "node07", "gpu-a"});
  CHECK(c.nnodes == 6);
  CHECK(c.node_rank == 2);
  CHECK(c.endpoint_host == "node01");
  CHECK(c.run_id == "4242");
  CHECK(c.gpu_ids.empty());
  CHECK(c.origin == "SLURM_JOB_NODELIST=node[01-04,07],gpu-a");
}

TEST_CASE("the step's node list wins inside srun", "[cluster][slurm]") {
  auto c = ok(job({{"SLURM_STEP_NODELIST", "node[03-04]"},
                   {"SLURM_STEP_NUM_NODES", "2"},
                   {"SLURM_NODEID", "1"}}));
  CHECK(c.hosts == std::vector<std::string>{"node03", "node04"});
  CHECK(c.node_rank == 1);
  CHECK(c.endpoint_host == "node03");
  // The job's count does not have to match the step's list.
  CHECK(c.nnodes == 2);
}

TEST_CASE("older variable names still work", "[cluster][slurm]") {
  auto c = ok({{"SLURM_JOBID", "7"},
               {"SLURM_NODELIST", "a,b"},
               {"SLURM_NNODES", "2"},
               {"SLURM_NODEID", "0"}});
  CHECK(c.run_id == "7");
  CHECK(c.nnodes == 2);
}

TEST_CASE("without SLURM_NODEID the rank comes from the node's name", "[cluster][slurm]") {
  Environment env = job();
  env.erase("SLURM_NODEID");
  CHECK(ok(env, "node04").node_rank == 3);
  CHECK(ok(env, "NODE04.cluster.example").node_rank == 3);
  env["SLURMD_NODENAME"] = "gpu-a";
  CHECK(ok(env, "node04").node_rank == 5);
  env.erase("SLURMD_NODENAME");
  CHECK_THAT(error(env, "login1"), Catch::Contains("'login1' is not in SLURM_JOB_NODELIST"));
  CHECK_THAT(error(env, "login1"), Catch::Contains("--node-rank"));
}

TEST_CASE("GPU ids from the step, else the job", "[cluster][slurm]") {
  auto c = ok(job({{"SLURM_JOB_GPUS", "0,1,2,3"}, {"SLURM_STEP_GPUS", "2,3"}}));
  CHECK(c.gpu_ids == std::vector<int>{2, 3});
  CHECK(c.gpu_source == "SLURM_STEP_GPUS");
  c = ok(job({{"SLURM_JOB_GPUS", "5,1"}}));
  CHECK(c.gpu_ids == std::vector<int>{5, 1});
  CHECK(c.gpu_source == "SLURM_JOB_GPUS");
  CHECK_THAT(error(job({{"SLURM_STEP_GPUS", "1,x"}})), Catch::Contains("SLURM_STEP_GPUS=1,x"));
  CHECK_THAT(error(job({{"SLURM_STEP_GPUS", "1,1"}})), Catch::Contains("appears twice"));
}

TEST_CASE("inconsistent or missing Slurm variables are errors", "[cluster][slurm]") {
  CHECK_THAT(error(job({{"SLURM_NODEID", "6"}})), Catch::Contains("SLURM_NODEID=6"));
  CHECK_THAT(error(job({{"SLURM_NODEID", "-1"}})), Catch::Contains("SLURM_NODEID=-1"));
  CHECK_THAT(error(job({{"SLURM_JOB_NUM_NODES", "5"}})),
             Catch::Contains("SLURM_JOB_NUM_NODES=5 but SLURM_JOB_NODELIST names 6 hosts"));
  CHECK_THAT(error(job({{"SLURM_JOB_NODELIST", "n[1-2],n2"}, {"SLURM_JOB_NUM_NODES", "3"}})),
             Catch::Contains("names a host twice"));
  CHECK_THAT(error(job({{"SLURM_JOB_NODELIST", "n[1-"}})), Catch::Contains("never closed"));
  CHECK_THAT(error({{"SLURM_JOB_ID", "9"}}), Catch::Contains("--launcher local"));
}

TEST_CASE("global GPU ids become a --gpu-ids selection for what the process sees",
          "[cluster][slurm]") {
  auto spec = [](std::vector<int> ids, std::optional<std::string> visible) {
    auto r = gpu_ids_for_visible(ids, visible, "SLURM_STEP_GPUS");
    INFO(r.status().to_string());
    REQUIRE(r);
    return *r;
  };
  CHECK(spec({2, 3}, std::nullopt) == "2,3");
  CHECK(spec({2, 3}, "2,3") == "0,1");    // global ids exported as they are
  CHECK(spec({3, 2}, "1,2,3") == "2,1");  // order of the Slurm list kept
  CHECK(spec({6, 7}, "0,1") == "0,1");    // device cgroups renumber what is seen
  auto bad = gpu_ids_for_visible({6, 7}, "0,1,2", "SLURM_STEP_GPUS");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.status().message(),
             Catch::Contains("SLURM_STEP_GPUS=6,7 does not match CUDA_VISIBLE_DEVICES=0,1,2"));
}
