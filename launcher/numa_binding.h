// --numa-binding: which logical CPUs each local rank is bound to, with torchrun's meanings
// (torch/numa/binding.py, PyTorch 2.9+), computed from a NumaTopology (no I/O here):
//   node          every allowed CPU of the worker's NUMA node;
//   socket        every allowed CPU of every NUMA node of that node's socket;
//   exclusive     the node's physical cores divided among the workers on that node, in local
//                 rank order, the lowest ranks getting one extra core when it does not divide
//                 (every hyperthread of a core goes with it);
//   core-complex  one group of CPUs sharing a last-level cache (an L3 "core complex") on the
//                 node, largest groups first, rank i on a node getting group i mod count.
// The worker's NUMA node: torchrun's is the node of the GPU whose index is the local rank
// (its PCI numa_node). ddprun uses the node of the worker's GPU when that is known
// (`gpu_nodes[r]`); otherwise it spreads the local ranks over the nodes that have allowed CPUs
// in contiguous blocks (rank r of n on node index r * nodes / n), so a machine without GPUs
// gets one block of ranks per node.
// Only CPUs in `allowed` (ddprun's own affinity) are used, as torchrun intersects with
// sched_getaffinity. Memory: torchrun sets no memory policy; ddprun prefers (never binds to)
// the NUMA nodes of each rank's CPUs, see plan_memory_nodes.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "agent/config.h"
#include "common/status.h"
#include "launcher/numa_topology.h"

namespace ddp::launcher {

// One CPU list per local rank (sorted). Errors: kInvalidArgument naming the problem and the
// fix (no allowed CPU on any node, too few cores for exclusive).
Result<std::vector<std::vector<int>>> plan_numa_binding(
    agent::NumaBinding mode, const NumaTopology& topology, int nproc, const std::set<int>& allowed,
    const std::vector<std::optional<int>>& gpu_nodes);

// The memory nodes of each rank of `cpu_plan`: the NUMA nodes holding any of its CPUs that
// are also in `allowed_nodes` (the nodes this process may allocate on, get_mempolicy's
// MPOL_F_MEMS_ALLOWED), sorted; empty for a rank none of whose nodes is allowed (a fake tree's
// node the kernel does not have): that rank keeps the default policy.
std::vector<std::vector<int>> plan_memory_nodes(const NumaTopology& topology,
                                                const std::vector<std::vector<int>>& cpu_plan,
                                                const std::set<int>& allowed_nodes);

}  // namespace ddp::launcher
