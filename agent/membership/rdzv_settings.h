// What a multi-node agent takes from --rdzv-endpoint, --rdzv-conf, --nnodes and the restart,
// progress and straggler options: where the rendezvous daemon is, whether this agent hosts it
// (torchrun's is_host), and the membership Config every node sends with its JOIN. Pure: no I/O.
//
// Static backend (--rdzv-backend static --node-rank R --master-addr A --master-port P): the
// daemon is A:P, node rank 0 hosts it (and it is the workers' store too), every node pins
// its group rank to R, and --nnodes N is MIN = MAX = N.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/config.h"
#include "common/status.h"
#include "rendezvous/membership/config.h"
#include "rendezvous/membership/job.h"

namespace ddp::agent {

struct RdzvSettings {
  std::string host;                       // the daemon's host (brackets of an IPv6 literal removed)
  std::uint16_t port = 29400;             // torchrun's default c10d port when none is given
  std::optional<bool> is_host;            // --rdzv-conf is_host=...; unset = infer (port bindable)
  rendezvous::membership::Config config;  // nodes, restarts, timeouts, keep-alive
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};  // read_timeout
  // Static backend only: this node's group rank (--node-rank). Set means: the daemon at
  // host:port is also the worker store (MASTER_ADDR/PORT), node rank 0 hosts it, and the
  // other nodes retry reaching it until config.join_timeout (node rank 0 may start later).
  std::optional<std::uint32_t> node_rank;
  // Job secrets: --rdzv-conf secret_file=PATH as given; the secret itself is loaded by
  // load_job_secret() (agent/membership/job_secret.h), which does the I/O.
  std::optional<std::string> secret_file;
  std::optional<std::string> secret;
  // etcd: the job's facts a newly elected host's daemon resumes from (Job::resume).
  std::optional<rendezvous::membership::ResumePoint> resume;
};

// Errors (kInvalidArgument, naming the option and the fix): c10d without --rdzv-endpoint, a
// bad port; static with --master-port 0, is_host, a --node-rank out of range, an elastic
// --nnodes or --exclude-straggler; an empty secret_file, an unknown --rdzv-conf key, a value
// that is not a number of seconds, a Config that validate() refuses.
Result<RdzvSettings> rdzv_settings(const AgentConfig& config);

}  // namespace ddp::agent
