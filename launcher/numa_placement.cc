#include "launcher/numa_placement.h"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launcher/numa_binding.h"
#include "launcher/numa_topology.h"

namespace ddp::launcher {
namespace {

Result<std::set<int>> own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) {
    return io_error(std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  std::set<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

// The nodes this process may allocate memory on (its cpuset's mems).
Result<std::set<int>> own_memory_nodes() {
  constexpr unsigned long kBits = 1024;  // MAX_NUMNODES of the largest kernel configs
  unsigned long mask[kBits / (8 * sizeof(unsigned long))] = {};
  if (::syscall(SYS_get_mempolicy, nullptr, mask, kBits, nullptr, MPOL_F_MEMS_ALLOWED) != 0) {
    return io_error(std::string("get_mempolicy: ") + std::strerror(errno));
  }
  std::set<int> nodes;
  for (unsigned long n = 0; n < kBits; ++n) {
    if ((mask[n / (8 * sizeof(unsigned long))] >> (n % (8 * sizeof(unsigned long)))) & 1UL)
      nodes.insert(static_cast<int>(n));
  }
  return nodes;
}

// PCI addresses of the NVIDIA GPUs, in address order; none when the driver is absent.
std::vector<std::string> gpu_addresses(const std::filesystem::path& proc_nvidia) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc_nvidia / "gpus", ec)) {
    out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Status place_workers(agent::AgentConfig& config, const std::filesystem::path& sysfs,
                     const std::filesystem::path& proc_nvidia) {
  if (config.numa_binding == agent::NumaBinding::kNone) return Status::ok();
  auto topology = read_numa_topology(sysfs);
  if (!topology) return io_error("--numa-binding: " + topology.status().message());
  // The two syscalls fail only in an unusual sandbox; the fix is then to bind nothing.
  auto unreadable = [](const Status& s) {
    return io_error("--numa-binding: " + s.message() + "; run without --numa-binding");
  };
  auto allowed = own_affinity();
  if (!allowed) return unreadable(allowed.status());
  auto nodes_by_gpu = pci_numa_nodes(sysfs, gpu_addresses(proc_nvidia));
  std::vector<std::optional<int>> gpu_nodes;
  for (int r = 0; r < config.nproc_per_node; ++r) {
    int gpu = r < static_cast<int>(config.gpu_ids.size()) ? config.gpu_ids[r] : r;
    gpu_nodes.push_back(gpu < static_cast<int>(nodes_by_gpu.size()) ? nodes_by_gpu[gpu]
                                                                    : std::nullopt);
  }
  auto plan =
      plan_numa_binding(config.numa_binding, *topology, config.nproc_per_node, *allowed, gpu_nodes);
  if (!plan) return plan.status();
  auto mems = own_memory_nodes();
  if (!mems) return unreadable(mems.status());
  config.memory_nodes = plan_memory_nodes(*topology, *plan, *mems);
  config.cpu_affinity = std::move(plan).value();
  return Status::ok();
}

}  // namespace ddp::launcher
