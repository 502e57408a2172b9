// --nproc-per-node gpu|cpu|auto, --gpu-ids and --virtual-local-rank through the whole parser.
#include "tests/catch.h"
#include "tests/launcher/options_test_util.h"

using namespace ddp::launcher;
using namespace ddp::launcher::testing;

namespace {

ddp::agent::AgentConfig config(const std::vector<std::string>& args, const Machine& m) {
  auto r = parse(args, m);
  INFO(r.status().to_string());
  REQUIRE(r);
  return r->config;
}

std::string error(const std::vector<std::string>& args, const Machine& m) {
  auto r = parse(args, m);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
  return r.status().message();
}

}  // namespace

TEST_CASE("nproc-per-node words count GPUs and CPUs", "[launcher]") {
  Machine eight{.gpus = 8, .cpus = 6};
  Machine none{.gpus = 0, .cpus = 6};
  CHECK(config({"--nproc-per-node", "gpu", "x.py"}, eight).nproc_per_node == 8);
  CHECK(config({"--nproc-per-node", "cpu", "x.py"}, eight).nproc_per_node == 6);
  CHECK(config({"--nproc-per-node", "auto", "x.py"}, eight).nproc_per_node == 8);
  CHECK(config({"--nproc-per-node", "auto", "x.py"}, none).nproc_per_node == 6);
  CHECK_THAT(error({"--nproc-per-node", "gpu", "x.py"}, none),
             Catch::Contains("no GPU is found") && Catch::Contains("cpu or auto"));
  CHECK_THAT(error({"--nproc-per-node", "tpu", "x.py"}, eight),
             Catch::Contains("gpu, cpu or auto"));
  SECTION("an inherited CUDA_VISIBLE_DEVICES limits the count") {
    Machine limited{.gpus = 8, .cpus = 6, .env = {{"CUDA_VISIBLE_DEVICES", "5,2,7"}}};
    CHECK(config({"--nproc-per-node", "gpu", "x.py"}, limited).nproc_per_node == 3);
    CHECK(config({"--nproc_per_node", "auto", "x.py"}, limited).nproc_per_node == 3);
    Machine hidden{.gpus = 8, .cpus = 6, .env = {{"CUDA_VISIBLE_DEVICES", ""}}};
    CHECK(config({"--nproc-per-node", "auto", "x.py"}, hidden).nproc_per_node == 6);
    CHECK_THAT(error({"--nproc-per-node", "gpu", "x.py"}, hidden),
               Catch::Contains("CUDA_VISIBLE_DEVICES="));
  }
  SECTION("PET_NPROC_PER_NODE=gpu works like the flag") {
    Machine env{.gpus = 2, .env = {{"PET_NPROC_PER_NODE", "gpu"}}};
    CHECK(config({"x.py"}, env).nproc_per_node == 2);
  }
}

TEST_CASE("gpu-ids picks the GPUs and the worker count", "[launcher]") {
  Machine eight{.gpus = 8};
  auto c = config({"--gpu-ids", "1,6,3", "x.py"}, eight);
  CHECK(c.gpu_ids == std::vector<int>{1, 6, 3});
  CHECK(c.nproc_per_node == 3);
  CHECK_FALSE(c.virtual_local_rank);
  CHECK(config({"--gpu-ids", "1,6,3", "--nproc-per-node", "3", "x.py"}, eight).nproc_per_node == 3);
  auto v = config({"--gpu-ids", "2,0", "--virtual-local-rank", "x.py"}, eight);
  CHECK(v.gpu_ids == std::vector<int>{2, 0});
  CHECK(v.virtual_local_rank);
  SECTION("ids index the inherited CUDA_VISIBLE_DEVICES, as CUDA device numbers do") {
    Machine limited{.gpus = 8, .env = {{"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}};
    CHECK(config({"--gpu-ids", "3,1", "x.py"}, limited).gpu_ids == std::vector<int>{7, 5});
    CHECK_THAT(error({"--gpu-ids", "4", "x.py"}, limited),
               Catch::Contains("GPU 4 does not exist") && Catch::Contains("0 to 3"));
  }
}

TEST_CASE("gpu-ids errors", "[launcher]") {
  Machine four{.gpus = 4};
  CHECK_THAT(error({"--gpu-ids", "1,2", "--nproc-per-node", "3", "x.py"}, four),
             Catch::Contains("conflicts with --gpu-ids 1,2") && Catch::Contains("make it 2"));
  CHECK_THAT(error({"--gpu-ids", "1,2", "--nproc-per-node", "gpu", "x.py"}, four),
             Catch::Contains("conflicts"));
  CHECK_THAT(error({"--gpu-ids", "1,2", "x.py"}, {.gpus = 4, .env = {{"PET_NPROC_PER_NODE", "4"}}}),
             Catch::Contains("PET_NPROC_PER_NODE 4 conflicts"));
  CHECK_THAT(error({"--gpu-ids", "1,1", "x.py"}, four), Catch::Contains("listed twice"));
  CHECK_THAT(error({"--gpu-ids", "-1", "x.py"}, four), Catch::Contains("GPU id -1 is negative"));
  CHECK_THAT(error({"--gpu-ids", "0,9", "x.py"}, four),
             Catch::Contains("GPU 9 does not exist") && Catch::Contains("4 GPUs found"));
  CHECK_THAT(error({"--gpu-ids", "one", "x.py"}, four), Catch::Contains("'one' is not a GPU id"));
  CHECK_THAT(error({"--gpu-ids", "1,,2", "x.py"}, four), Catch::Contains("'' is not a GPU id"));
  CHECK_THAT(error({"--gpu-ids", "", "x.py"}, four), Catch::Contains("--gpu-ids"));
  CHECK_THAT(error({"--gpu-ids", "0", "x.py"}, {.gpus = 0}), Catch::Contains("no usable GPU"));
}

TEST_CASE("virtual-local-rank without --gpu-ids gives worker i visible GPU i", "[launcher]") {
  auto c = config({"--virtual-local-rank", "--nproc-per-node", "2", "x.py"},
                  {.gpus = 4, .env = {{"CUDA_VISIBLE_DEVICES", "3,2,1"}}});
  CHECK(c.gpu_ids == std::vector<int>{3, 2});
  CHECK_THAT(error({"--virtual-local-rank", "--nproc-per-node", "5", "x.py"}, {.gpus = 4}),
             Catch::Contains("only 4 visible GPUs"));
  auto cpu_only = config({"--virtual-local-rank", "--nproc-per-node", "2", "x.py"}, {.gpus = 0});
  CHECK(cpu_only.gpu_ids.empty());
  CHECK(cpu_only.virtual_local_rank);
}
