// The machine's CPU topology as --numa-binding needs it, read from sysfs the way torchrun's
// torch/numa/binding.py reads it: NUMA nodes and their CPUs
// (<sysfs>/devices/system/node/node<N>/cpulist), and per logical CPU its socket
// (topology/physical_package_id), its physical core (the smallest CPU of
// topology/thread_siblings_list) and its core complex (the smallest CPU sharing its
// highest-level data or unified cache, cache/index<i>/{type,level,shared_cpu_list}).
// A GPU's NUMA node is <sysfs>/bus/pci/devices/<address>/numa_node (-1 means node 0).
//
// The sysfs root is a parameter so tests read a fake tree; ddprun passes /sys, or
// $DDPRUN_SYSFS when set (the test seam). Reads files; any thread.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::launcher {

struct CpuPlace {
  int socket = 0;
  int core = 0;     // the smallest logical CPU of its physical core
  int complex = 0;  // the smallest logical CPU sharing its last-level cache
};

struct NumaTopology {
  std::map<int, std::set<int>> node_cpus;  // NUMA node -> its logical CPUs
  std::map<int, CpuPlace> cpus;            // every CPU of node_cpus
};

// "0-3,8,10-11" (sysfs list format) into its numbers; kInvalidArgument for junk.
Result<std::set<int>> parse_cpu_list(const std::string& text);

// The other way: {0,1,2,3,8} as "0-3,8".
std::string cpu_list_text(const std::vector<int>& sorted_cpus);

// Errors: kIo naming the file that is missing or unreadable. A machine without
// devices/system/node (a kernel without NUMA) is one node 0 holding devices/system/cpu/online.
Result<NumaTopology> read_numa_topology(const std::filesystem::path& sysfs);

// The NUMA node of each PCI address ("0000:3b:00.0"), nullopt where sysfs does not say.
std::vector<std::optional<int>> pci_numa_nodes(const std::filesystem::path& sysfs,
                                               const std::vector<std::string>& addresses);

}  // namespace ddp::launcher
