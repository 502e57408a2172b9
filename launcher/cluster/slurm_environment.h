// Inside a Slurm allocation: this node's part of the job from the variables Slurm sets, so
// that `srun --ntasks-per-node=1 ddprun ...` needs no rendezvous flags.
//
// Which variables (facts from Slurm's srun/sbatch documentation):
//  - node list: SLURM_STEP_NODELIST (set by srun for the step's nodes), else SLURM_JOB_NODELIST
//    (the allocation, set by sbatch/salloc and inherited), else SLURM_NODELIST (older name of
//    the job's list). Expanded by host_list.h; the hosts must be unique.
//  - node count, cross-checked against the list: SLURM_STEP_NUM_NODES with the step list,
//    SLURM_JOB_NUM_NODES or SLURM_NNODES with the job list.
//  - node rank: SLURM_NODEID (the node's index in the step, 0-based), else the position of
//    SLURMD_NODENAME, else of the given hostname, in the list.
//  - run id: SLURM_JOB_ID (or the older SLURM_JOBID).
//  - GPUs: SLURM_STEP_GPUS, else SLURM_JOB_GPUS: comma-separated global GPU ids.
// Pure; any thread. Every failure is kInvalidArgument naming the variable and the fix.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/cluster_context.h"

namespace ddp::launcher::cluster {

// True when SLURM_JOB_ID (or SLURM_JOBID) is set: ddprun runs inside an allocation.
bool in_slurm_job(const Environment& env);

// The context of this node. `hostname` is this machine's name, used only when neither
// SLURM_NODEID nor SLURMD_NODENAME is set.
Result<ClusterContext> slurm_context(const Environment& env, std::string_view hostname);

// "0,1,3" (optionally with "lo-hi" ranges) into distinct non-negative ids, in order.
Result<std::vector<int>> parse_gpu_id_list(std::string_view what, std::string_view text);

// The --gpu-ids selection (indices into the GPUs this process sees) that means the given
// global GPU ids, given the inherited CUDA_VISIBLE_DEVICES:
//  - unset: the ids themselves (they are physical indices);
//  - set and listing every id: their positions in it (Slurm without device cgroups exports
//    the global ids, "2,3");
//  - set to as many entries as there are ids but not listing them: 0..n-1 (with device
//    cgroups Slurm renumbers what the step sees, "0,1", while SLURM_STEP_GPUS stays global);
//  - anything else is an error naming both variables and the fix (--gpu-ids).
// `source` names the ids' variable in messages.
Result<std::string> gpu_ids_for_visible(const std::vector<int>& ids,
                                        const std::optional<std::string>& cuda_visible_devices,
                                        std::string_view source);

}  // namespace ddp::launcher::cluster
