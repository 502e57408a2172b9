// --numa-binding: sysfs reading on a fake tree and the plan per mode (launcher/numa_*.h).
// The fake machine: 16 logical CPUs, two hyperthreads per core (CPUs 2k and 2k+1), four NUMA
// nodes of four CPUs (node n: 4n..4n+3), nodes 0-1 on socket 0 and 2-3 on socket 1; node 0
// has two L3 core complexes ({0,1} and {2,3}), every other node one.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "launcher/numa_binding.h"
#include "launcher/numa_placement.h"
#include "launcher/numa_topology.h"
#include "tests/catch.h"

namespace ddp::launcher {
namespace {

namespace fs = std::filesystem;
using agent::NumaBinding;

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

std::string l3_of(int cpu) {
  if (cpu < 4) return cpu < 2 ? "0-1" : "2-3";
  int base = cpu / 4 * 4;
  return std::to_string(base) + "-" + std::to_string(base + 3);
}

struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / ("ddp_numa_test_" + std::to_string(::getpid()));
  FakeSysfs() {
    fs::remove_all(root);
    for (int n = 0; n < 4; ++n) {
      put(root / "devices/system/node" / ("node" + std::to_string(n)) / "cpulist",
          std::to_string(4 * n) + "-" + std::to_string(4 * n + 3));
    }
    put(root / "devices/system/node/possible", "0-3");  // not a node directory
    for (int c = 0; c < 16; ++c) {
      fs::path cpu = root / "devices/system/cpu" / ("cpu" + std::to_string(c));
      put(cpu / "topology/physical_package_id", std::to_string(c / 8));
      int core = c / 2 * 2;
      put(cpu / "topology/thread_siblings_list",
          std::to_string(core) + "-" + std::to_string(core + 1));
      put(cpu / "cache/index0/type", "Data");
      put(cpu / "cache/index0/level", "1");
      put(cpu / "cache/index0/shared_cpu_list",
          std::to_string(core) + "-" + std::to_string(core + 1));
      put(cpu / "cache/index1/type", "Instruction");
      put(cpu / "cache/index1/level", "4");  // an instruction cache never counts
      put(cpu / "cache/index1/shared_cpu_list", "0-15");
      put(cpu / "cache/index3/type", "Unified");
      put(cpu / "cache/index3/level", "3");
      put(cpu / "cache/index3/shared_cpu_list", l3_of(c));
    }
    put(root / "bus/pci/devices/0000:3b:00.0/numa_node", "3");
    put(root / "bus/pci/devices/0000:af:00.0/numa_node", "-1");
  }
  ~FakeSysfs() { fs::remove_all(root); }
};

std::set<int> all_cpus() {
  std::set<int> s;
  for (int c = 0; c < 16; ++c) s.insert(c);
  return s;
}

std::vector<std::string> plan_text(NumaBinding mode, const NumaTopology& t, int nproc,
                                   const std::vector<std::optional<int>>& gpus = {},
                                   const std::set<int>& allowed = all_cpus()) {
  auto plan = plan_numa_binding(mode, t, nproc, allowed, gpus);
  INFO(plan.status().to_string());
  REQUIRE(plan);
  std::vector<std::string> out;
  for (const auto& cpus : *plan) out.push_back(cpu_list_text(cpus));
  return out;
}

using Lists = std::vector<std::string>;

TEST_CASE("cpu lists parse and print in sysfs form", "[numa]") {
  CHECK(*parse_cpu_list("0-3,8,10-11") == std::set<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("")->empty());
  CHECK_FALSE(parse_cpu_list("3-1"));
  CHECK_FALSE(parse_cpu_list("a"));
  CHECK(cpu_list_text({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
}

TEST_CASE("the fake topology reads as nodes, sockets, cores and core complexes", "[numa]") {
  FakeSysfs sys;
  auto t = read_numa_topology(sys.root);
  REQUIRE(t);
  REQUIRE(t->node_cpus.size() == 4);
  CHECK(t->node_cpus.at(2) == std::set<int>{8, 9, 10, 11});
  CHECK(t->cpus.at(9).socket == 1);
  CHECK(t->cpus.at(9).core == 8);
  CHECK(t->cpus.at(3).complex == 2);
  CHECK(t->cpus.at(6).complex == 4);
  auto gpus = pci_numa_nodes(sys.root, {"0000:3B:00.0", "0000:af:00.0", "0000:01:00.0"});
  CHECK(gpus == std::vector<std::optional<int>>{3, 0, std::nullopt});
  fs::remove(sys.root / "devices/system/cpu/cpu5/topology/physical_package_id");
  CHECK_THAT(read_numa_topology(sys.root).status().message(),
             Catch::Contains("cpu5/topology/physical_package_id"));
}

TEST_CASE("each mode binds as torchrun's binding.py says", "[numa]") {
  FakeSysfs sys;
  auto t = read_numa_topology(sys.root).value();
  // Without GPUs the ranks go to the nodes in contiguous blocks.
  CHECK(plan_text(NumaBinding::kNode, t, 4) == Lists{"0-3", "4-7", "8-11", "12-15"});
  CHECK(plan_text(NumaBinding::kNode, t, 2) == Lists{"0-3", "8-11"});
  CHECK(plan_text(NumaBinding::kNode, t, 8)[1] == "0-3");
  CHECK(plan_text(NumaBinding::kSocket, t, 2) == Lists{"0-7", "8-15"});
  // exclusive: node 0's two cores shared by its two ranks, hyperthreads kept together.
  CHECK(plan_text(NumaBinding::kExclusive, t, 8) ==
        Lists{"0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-13", "14-15"});
  CHECK(plan_text(NumaBinding::kExclusive, t, 4) == Lists{"0-3", "4-7", "8-11", "12-15"});
  auto crowded = plan_numa_binding(NumaBinding::kExclusive, t, 12, all_cpus(), {});
  CHECK_THAT(crowded.status().message(),
             Catch::Contains("NUMA node 0 has 2 physical cores for 3 workers"));
  // core-complex: node 0 has two L3s, each of its ranks gets one; node 1 has one, shared.
  CHECK(plan_text(NumaBinding::kCoreComplex, t, 8) ==
        Lists{"0-1", "2-3", "4-7", "4-7", "8-11", "8-11", "12-15", "12-15"});
  CHECK(plan_text(NumaBinding::kCoreComplex, t, 12)[2] == "0-1");  // wraps around
}

TEST_CASE("a GPU's node wins and allowed CPUs limit every mode", "[numa]") {
  FakeSysfs sys;
  auto t = read_numa_topology(sys.root).value();
  CHECK(plan_text(NumaBinding::kNode, t, 2, {3, 0}) == Lists{"12-15", "0-3"});
  // Rank 1 has no GPU node: spread, it lands on node 2 (r * 4 / 2), socket 1 too.
  CHECK(plan_text(NumaBinding::kSocket, t, 2, {0, std::nullopt}) == Lists{"0-7", "8-15"});
  // Two GPUs on node 1: exclusive splits that node between them.
  CHECK(plan_text(NumaBinding::kExclusive, t, 2, {1, 1}) == Lists{"4-5", "6-7"});
  // Only CPUs 2-5 allowed: node 0 offers 2-3, node 1 4-5; nodes 2-3 are not used.
  CHECK(plan_text(NumaBinding::kNode, t, 2, {}, {2, 3, 4, 5}) == Lists{"2-3", "4-5"});
  CHECK(plan_text(NumaBinding::kNode, t, 1, {3}, {2, 3, 4, 5}) == Lists{"2-3"});
  CHECK_THAT(plan_numa_binding(NumaBinding::kNode, t, 1, {99}, {}).status().message(),
             Catch::Contains("no NUMA node has a CPU"));
}

TEST_CASE("memory prefers the allowed nodes of each rank's CPUs", "[numa]") {
  FakeSysfs sys;
  auto t = read_numa_topology(sys.root).value();
  const std::set<int> every{0, 1, 2, 3};
  auto nodes = [&](NumaBinding mode, int nproc, const std::vector<std::optional<int>>& gpus,
                   const std::set<int>& mems) {
    auto plan = plan_numa_binding(mode, t, nproc, all_cpus(), gpus);
    REQUIRE(plan);
    return plan_memory_nodes(t, *plan, mems);
  };
  using Nodes = std::vector<std::vector<int>>;
  CHECK(nodes(NumaBinding::kNode, 2, {3, 0}, every) == Nodes{{3}, {0}});
  CHECK(nodes(NumaBinding::kSocket, 2, {}, every) == Nodes{{0, 1}, {2, 3}});
  CHECK(nodes(NumaBinding::kExclusive, 2, {1, 1}, every) == Nodes{{1}, {1}});
  CHECK(nodes(NumaBinding::kCoreComplex, 8, {}, every)[1] == std::vector<int>{0});
  CHECK(nodes(NumaBinding::kCoreComplex, 8, {}, every)[7] == std::vector<int>{3});
  // Nodes the kernel does not let this process allocate on drop out; none left: default.
  CHECK(nodes(NumaBinding::kNode, 2, {3, 0}, {0}) == Nodes{{}, {0}});
  CHECK(nodes(NumaBinding::kSocket, 2, {}, {1, 2}) == Nodes{{1}, {2}});
  // A CPU list spanning nodes (a hand-made plan) names each node once.
  CHECK(plan_memory_nodes(t, {{3, 4, 5}}, every) == Nodes{{0, 1}});
}

TEST_CASE("place_workers reads the tree and this process's affinity", "[numa]") {
  FakeSysfs sys;
  fs::path nvidia = sys.root / "proc_nvidia";
  fs::create_directories(nvidia / "gpus/0000:3b:00.0");
  agent::AgentConfig config;
  config.nproc_per_node = 1;
  REQUIRE(place_workers(config, sys.root, nvidia));
  CHECK(config.cpu_affinity.empty());  // no --numa-binding: nothing
  config.numa_binding = NumaBinding::kNode;
  REQUIRE(place_workers(config, sys.root, nvidia));
  REQUIRE(config.cpu_affinity.size() == 1);
  // GPU 0 is on node 3; unless this machine lets ddprun run there, the rank falls back to
  // the first node with allowed CPUs. Either way the CPUs are allowed ones of one node.
  cpu_set_t own;
  REQUIRE(::sched_getaffinity(0, sizeof own, &own) == 0);
  for (int cpu : config.cpu_affinity[0]) CHECK(CPU_ISSET(cpu, &own));
  CHECK_FALSE(config.cpu_affinity[0].empty());
  // Memory: the rank's node when this process may allocate there (the kernel says, not the
  // fake tree), else nothing.
  REQUIRE(config.memory_nodes.size() == 1);
  CHECK(config.memory_nodes[0].size() <= 1);
  const auto topology = read_numa_topology(sys.root);  // kept: node_cpus refers into it
  REQUIRE(topology);
  for (int node : config.memory_nodes[0]) {
    CHECK(topology->node_cpus.at(node).contains(config.cpu_affinity[0].front()));
  }
  CHECK_THAT(place_workers(config, sys.root / "missing", nvidia).message(),
             Catch::Contains("--numa-binding: cannot read"));
}

}  // namespace
}  // namespace ddp::launcher
