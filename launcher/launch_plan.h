// LaunchPlan: how ddprun reaches the job's nodes, decided by --launcher, --hosts/--hostfile,
// the ssh options and the batch system's environment (launcher/cluster_options.cc). The agent
// never sees it; it is the launcher's part of an Invocation. Plain data.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/cluster/cluster_context.h"
#include "launcher/cluster/host_spec.h"
#include "launcher/cluster/pbs_nodefile.h"
#include "launcher/cluster/ssh_command.h"

namespace ddp::launcher {

struct LaunchPlan {
  // kLocal: this node only. kSsh: --hosts/--hostfile. kSlurm/kPbs: inside an allocation,
  // the scheduler's environment describes the job.
  enum class Kind { kLocal, kSsh, kSlurm, kPbs };
  Kind kind = Kind::kLocal;
  std::vector<cluster::HostSlots> hosts;           // kSsh: the hosts, in node-rank order
  cluster::SshSettings ssh;                        // kSsh: how to reach them
  std::vector<std::string> forward_env;            // kSsh: --forward-env patterns
  std::optional<cluster::ClusterContext> context;  // kSlurm/kPbs: what the scheduler said
  // kSsh/kPbs: the options and program every remote agent gets (launcher/agent_args.h),
  // before the per-node ones.
  std::vector<std::string> agent_args;
  // True when this ddprun starts every node's agent itself (launcher/fanout/): kSsh with hosts
  // other than this one alone, kPbs with --launcher pbs on a job of several nodes. agent_args
  // then hold no rendezvous/topology option: the fan-out adds them per node.
  bool fan_out = false;
  std::vector<cluster::PbsNode> pbs_nodes;  // kPbs fan-out: the job's unique nodes
  // Fan-out: --nproc-per-node as given (resolved on each node: "gpu" means that node's GPUs)
  // for nodes without slots; empty = the agent's default.
  std::string nproc_per_node;
};

}  // namespace ddp::launcher
