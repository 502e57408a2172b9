// Applies --numa-binding on this machine: reads the topology (launcher/numa_topology.h), this
// process's own CPU affinity and the NUMA nodes of the NVIDIA GPUs, then fills
// config.cpu_affinity with plan_numa_binding's lists and config.memory_nodes with
// plan_memory_nodes' (launcher/numa_binding.h) for the nodes this process may allocate on
// (get_mempolicy MPOL_F_MEMS_ALLOWED, the kernel's answer whatever the sysfs tree); the agent's
// workers are bound to them before exec (proc/child_setup.h).
//
// A worker's GPU is config.gpu_ids[local_rank] (--gpu-ids, --virtual-local-rank), else the
// GPU numbered like the local rank; GPU n is the n-th entry of <proc_nvidia>/gpus in PCI
// address order (nvidia-smi's order, CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID). No GPU, or an
// address sysfs does not place: the ranks are spread over the nodes.
// Nothing happens for NumaBinding::kNone. Errors: kIo (sysfs unreadable) and
// kInvalidArgument (see plan_numa_binding), one line each. Launcher thread, before the agent.
#pragma once

#include <filesystem>

#include "agent/config.h"
#include "common/status.h"

namespace ddp::launcher {

inline constexpr const char* kSysfsEnv = "DDPRUN_SYSFS";  // test seam: a fake /sys

Status place_workers(agent::AgentConfig& config, const std::filesystem::path& sysfs,
                     const std::filesystem::path& proc_nvidia);

}  // namespace ddp::launcher
