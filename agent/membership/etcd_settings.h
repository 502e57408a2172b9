// What an agent of an etcd job takes from --rdzv-endpoint and --rdzv-conf (pure, no I/O):
// the etcd endpoints (comma-separated, default port 2379), the key prefix, the lease TTL,
// TLS files, and the membership Config every node sends with its JOIN (from the same keys as
// c10d: join_timeout, last_call_timeout, close_timeout, read_timeout; without
// keep_alive_interval and keep_alive_max_attempt, the heartbeat budget is lease_ttl: a
// heartbeat every lease_ttl / 3, three missed).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/membership/rdzv_settings.h"
#include "common/status.h"
#include "etcd/endpoints.h"
#include "etcd/http_post.h"

namespace ddp::agent {

struct EtcdSettings {
  std::vector<etcd::Endpoint> endpoints;
  std::string prefix = "/ddprun";  // etcd_prefix; the job's keys are under prefix/run_id/
  // lease_ttl: liveness of each node. A lost machine (or a frozen agent) is noticed when its
  // lease expires, TTL to TTL + 0.5 s after its last keep-alive (every TTL/3); a dead agent
  // process at once (its death watch revokes the lease).
  std::chrono::seconds lease_ttl{5};
  bool tls = false;               // protocol=https
  std::string cacert, cert, key;  // TLS files
  RdzvSettings rdzv;              // Config and read_timeout (connect_timeout)
};

// The etcd keys of one job (docs/etcd.md), under P = <etcd_prefix>/<run_id>/.
struct EtcdKeys {
  EtcdKeys(const EtcdSettings& s, const std::string& run_id) : job(s.prefix + "/" + run_id + "/") {}
  std::string job;
  // "HOST:PORT" of the agent hosting the job's rendezvous daemon (under its lease): the election.
  std::string host() const { return job + "host"; }
  // The job's facts for a new host (etcd_state.h), written by the host.
  std::string state() const { return job + "state"; }
  // The JobFinished every node was told: a later agent of this run id is refused.
  std::string finished() const { return job + "finished"; }
  // One key per agent waiting to take a lost node's place (under its lease), while it waits:
  // a new host's first round waits for them too (docs/etcd.md).
  std::string spares() const { return job + "spares/"; }
};

// True for --rdzv-backend etcd, etcd-v2 and etcd-v3 (one backend speaking etcd's v3 API).
bool is_etcd_backend(const std::string& backend);

// Errors (kInvalidArgument naming the key and the fix): no or bad endpoints, an empty
// etcd_prefix, lease_ttl not a whole number of seconds from 1 to 3600, protocol neither http
// nor https, a TLS file with http, cert without key or key without cert, is_host, a removed key
// (presence_timeout: what replaced it), and the errors of apply_rdzv_conf() (an unknown key).
Result<EtcdSettings> etcd_settings(const AgentConfig& config);

// How to reach etcd: http, or https with the TLS files.
etcd::Transport etcd_transport(const EtcdSettings& s);

}  // namespace ddp::agent
