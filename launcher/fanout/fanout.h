// The launching ddprun of a multi-node job (LaunchPlan::fan_out): hosts the c10d rendezvous
// daemon in-process and starts one agent per node, over OpenSSH (kSsh) or through pbsdsh
// (kPbs, --launcher pbs), then waits for the job. With --rdzv-backend etcd nothing is hosted:
// the agents get the user's etcd endpoints, and the job's end (exit code, root cause) is read
// from etcd (etcd_outcome.h) when an agent exits.
//
//  - Before anything starts: the rendezvous settings are checked, every ssh host is probed
//    in parallel (`ssh ... HOST true`, bounded by ConnectTimeout), pbsdsh's flavor is found
//    (`pbsdsh --version`); a failure is one line on stderr and exit code 2.
//  - The daemon binds all interfaces on --rdzv-endpoint's port, else a free port. The agents
//    dial --rdzv-endpoint's host, else --local-addr, else the address of this machine that
//    routes to the first node (local_address.h).
//  - Output: every agent line relayed with "[HOST] " first (output_relay.h).
//  - Stopping (SIGINT, SIGTERM, SIGHUP, SIGQUIT, a node lost below --nnodes' minimum, or an
//    agent still running 30 s after the job finished):
//    ssh agents get EOF on stdin (their ssh stdin pipe is closed; --exit-on-stdin-eof makes
//    that a SIGTERM: workers stopped, node leaves); pbsdsh agents lose the daemon (it stops;
//    an etcd job's pbsdsh process groups get SIGTERM at once).
//    After --shutdown-timeout + 10 s the ssh/pbsdsh process groups get SIGTERM, 5 s later
//    SIGKILL. A second SIGINT sends SIGTERM at once.
//  - Exit code: the job's, as the daemon (or etcd) recorded it (the root cause's code, 0 on
//    success), never ssh's or pbsdsh's (PBS Pro's pbsdsh exits 0 on task failures); 128 +
//    signal when stopped by a signal; 1 when the job did not finish (every agent's end is
//    logged).
//
// Threading: run() blocks; one io_context, one thread.
#pragma once

#include <string>

#include "launcher/cluster/cluster_context.h"
#include "launcher/options.h"

namespace ddp::launcher::fanout {

struct FanoutProcess {
  cluster::Environment env;  // this process's environment
  std::string ddprun;        // absolute path of this ddprun (the agents run the same path)
  std::string cwd;           // absolute working directory (the agents start there)
};

int run(const launcher::Invocation& invocation, const FanoutProcess& process);

}  // namespace ddp::launcher::fanout
