#include "launcher/numa_binding.h"

#include <algorithm>
#include <map>
#include <string>

namespace ddp::launcher {
namespace {

using agent::NumaBinding;
using CpuSet = std::set<int>;

CpuSet allowed_on(const NumaTopology& t, int node, const CpuSet& allowed) {
  CpuSet out;
  auto it = t.node_cpus.find(node);
  if (it == t.node_cpus.end()) return out;
  for (int cpu : it->second) {
    if (allowed.contains(cpu)) out.insert(cpu);
  }
  return out;
}

// CPUs grouped by a key of their place (core or complex), groups in key order.
std::map<int, CpuSet> group_by(const NumaTopology& t, const CpuSet& cpus, int CpuPlace::*key) {
  std::map<int, CpuSet> groups;
  for (int cpu : cpus) groups[t.cpus.at(cpu).*key].insert(cpu);
  return groups;
}

Result<CpuSet> exclusive(const NumaTopology& t, int node, const CpuSet& cpus, int index,
                         int count) {
  auto cores = group_by(t, cpus, &CpuPlace::core);
  const int n = static_cast<int>(cores.size());
  if (n < count) {
    return invalid_argument("--numa-binding exclusive: NUMA node " + std::to_string(node) +
                            " has " + std::to_string(n) + " physical cores for " +
                            std::to_string(count) +
                            " workers; use --numa-binding node or fewer workers");
  }
  const int per = n / count;
  const int extra = n % count;
  const int start = index * per + std::min(index, extra);
  const int end = start + per + (index < extra ? 1 : 0);
  CpuSet out;
  int i = 0;
  for (const auto& [key, group] : cores) {
    if (i >= start && i < end) out.insert(group.begin(), group.end());
    ++i;
  }
  return out;
}

CpuSet core_complex(const NumaTopology& t, const CpuSet& cpus, int index) {
  auto by_key = group_by(t, cpus, &CpuPlace::complex);
  std::vector<std::pair<int, CpuSet>> groups(by_key.begin(), by_key.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.second.size() > b.second.size();  // larger first; key order kept among equals
  });
  return groups[static_cast<std::size_t>(index) % groups.size()].second;
}

CpuSet socket_of(const NumaTopology& t, const CpuSet& node_cpus,
                 const std::map<int, CpuSet>& usable) {
  const int socket = t.cpus.at(*node_cpus.begin()).socket;
  CpuSet out;
  for (const auto& [node, cpus] : usable) {
    if (t.cpus.at(*cpus.begin()).socket == socket) out.insert(cpus.begin(), cpus.end());
  }
  return out;
}

}  // namespace

Result<std::vector<std::vector<int>>> plan_numa_binding(
    NumaBinding mode, const NumaTopology& topology, int nproc, const std::set<int>& allowed,
    const std::vector<std::optional<int>>& gpu_nodes) {
  std::vector<std::vector<int>> plan;
  if (mode == NumaBinding::kNone || nproc <= 0) return plan;
  std::map<int, CpuSet> usable;  // nodes with allowed CPUs
  for (const auto& [node, cpus] : topology.node_cpus) {
    CpuSet mine = allowed_on(topology, node, allowed);
    if (!mine.empty()) usable[node] = std::move(mine);
  }
  if (usable.empty()) {
    return invalid_argument(
        "--numa-binding: no NUMA node has a CPU this process may run on; drop --numa-binding");
  }
  std::vector<int> nodes;
  for (const auto& [node, cpus] : usable) nodes.push_back(node);
  std::vector<int> node_of(static_cast<std::size_t>(nproc));
  for (int r = 0; r < nproc; ++r) {
    auto gpu = r < static_cast<int>(gpu_nodes.size()) ? gpu_nodes[r] : std::nullopt;
    node_of[r] =
        gpu && usable.contains(*gpu)
            ? *gpu
            : nodes[static_cast<std::size_t>(static_cast<long long>(r) *
                                             static_cast<long long>(nodes.size()) / nproc)];
  }
  for (int r = 0; r < nproc; ++r) {
    const int node = node_of[r];
    const CpuSet& cpus = usable.at(node);
    // This rank's index among the ranks on its node, and their number.
    const int index = static_cast<int>(std::count(node_of.begin(), node_of.begin() + r, node));
    const int count = static_cast<int>(std::count(node_of.begin(), node_of.end(), node));
    CpuSet bound;
    switch (mode) {
      case NumaBinding::kNode:
        bound = cpus;
        break;
      case NumaBinding::kSocket:
        bound = socket_of(topology, cpus, usable);
        break;
      case NumaBinding::kExclusive: {
        auto share = exclusive(topology, node, cpus, index, count);
        if (!share) return share.status();
        bound = std::move(share).value();
        break;
      }
      case NumaBinding::kCoreComplex:
        bound = core_complex(topology, cpus, index);
        break;
      case NumaBinding::kNone:
        break;
    }
    plan.emplace_back(bound.begin(), bound.end());
  }
  return plan;
}

std::vector<std::vector<int>> plan_memory_nodes(const NumaTopology& topology,
                                                const std::vector<std::vector<int>>& cpu_plan,
                                                const std::set<int>& allowed_nodes) {
  std::vector<std::vector<int>> out;
  for (const auto& cpus : cpu_plan) {
    std::vector<int> nodes;
    for (const auto& [node, node_cpus] : topology.node_cpus) {
      const bool holds =
          std::any_of(cpus.begin(), cpus.end(), [&](int cpu) { return node_cpus.contains(cpu); });
      if (holds && allowed_nodes.contains(node)) nodes.push_back(node);
    }
    out.push_back(std::move(nodes));
  }
  return out;
}

}  // namespace ddp::launcher
