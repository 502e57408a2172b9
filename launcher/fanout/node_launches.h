// What a fan-out runs to start every node's agent: one ssh command per host (--hosts,
// --hostfile), or the pbsdsh commands of --launcher pbs (launcher/cluster/pbs_launch.h). Each
// agent gets, before agent_args (the user's options and program, launcher/agent_args.h):
//   --launcher=local --nnodes=MIN:MAX --rdzv-backend=c10d --rdzv-endpoint=ADDR:PORT
//   --rdzv-id=ID --rdzv-conf=[secret_file=PATH,]<user's keys>,is_host=false
//   [--nproc-per-node=N] [--local-addr=HOST] [--exit-on-stdin-eof --secret-from-stdin]
//   --job-report-by-launcher
// The user's is_host and secret_file keys are dropped: the fan-out brings its own secret (on
// stdin over ssh, in a file with pbsdsh). With --rdzv-backend etcd: that backend, the user's
// etcd endpoints, --rdzv-conf without is_host and secret_file, and no --secret-from-stdin.
// --launcher=local: a remote node's own batch-system variables must not re-plan the launch.
// Over ssh the remote shell runs `cd CWD && exec env VARS... DDPRUN ...` (ssh_command.h,
// everything quoted); pbsdsh runs the same line through /bin/sh -c (its tasks start in the
// home directory with the job's environment). Pure; any thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/pbs_launch.h"
#include "launcher/options.h"

namespace ddp::launcher::fanout {

struct NodeLaunch {
  std::string label;              // output prefix and messages: the host, or "pbsdsh"
  std::vector<std::string> argv;  // ssh ... or pbsdsh ...
  bool stdin_pipe = false;        // ssh: the remote agent's stdin is its lifeline
};

// Where the agents find the rendezvous this ddprun hosts (or etcd).
struct FanoutSite {
  std::string ddprun;        // absolute path of ddprun on every node (this binary's)
  std::string cwd;           // absolute working directory of the agents
  std::string endpoint;      // "ADDR:PORT" ("[v6]:PORT"); etcd: the user's --rdzv-endpoint
  cluster::Environment env;  // this process's environment (forwarded variables)
  // pbsdsh agents (no stdin, no caller environment): a 0600 file in the shared working
  // directory holding the job secret, passed as --rdzv-conf secret_file=PATH. ssh agents read
  // the secret from stdin instead (--secret-from-stdin).
  std::string secret_file{};
};

// The options of one node's agent before agent_args; `local_addr` empty = the agent's own
// hostname, `slots` 0 = plan.nproc_per_node (or the agent's default).
std::vector<std::string> agent_options(const launcher::Invocation& invocation,
                                       const FanoutSite& site, const std::string& local_addr,
                                       int slots, bool exit_on_stdin_eof);

// One ssh command per host of invocation.launch (kSsh).
Result<std::vector<NodeLaunch>> ssh_launches(const launcher::Invocation& invocation,
                                             const FanoutSite& site);

// The probe run before anything starts: `ssh ... HOST true` with ConnectTimeout.
Result<std::vector<std::string>> ssh_probe(const launcher::Invocation& invocation,
                                           const std::string& host, int connect_timeout_s);

// The pbsdsh commands of invocation.launch (kPbs fan-out) for `flavor`. The variables of
// the default --forward-env patterns travel in the command line.
Result<std::vector<NodeLaunch>> pbs_launches(const launcher::Invocation& invocation,
                                             const FanoutSite& site, cluster::PbsFlavor flavor,
                                             const std::string& pbsdsh);

}  // namespace ddp::launcher::fanout
