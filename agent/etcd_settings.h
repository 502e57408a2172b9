// What an agent of an etcd job takes from --rdzv-endpoint and --rdzv-conf (pure, no I/O):
// the etcd endpoints (comma-separated, default port 2379), the key prefix, the lease TTL,
// TLS files, and the membership Config every node sends with its JOIN (from the same keys as
// c10d: join_timeout, last_call_timeout, close_timeout, read_timeout).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/rdzv_settings.h"
#include "common/status.h"
#include "etcd/endpoints.h"
#include "etcd/http_post.h"

namespace ddp::agent {

struct EtcdSettings {
  std::vector<etcd::Endpoint> endpoints;
  std::string prefix = "/ddprun";     // etcd_prefix; the job's keys are under prefix/run_id/
  std::chrono::seconds lease_ttl{5};  // lease_ttl: liveness of each node
  // presence_timeout (seconds, decimals allowed; default half the lease TTL; 0: off): how
  // long a presence connection's beats may stay unacknowledged before its machine counts as
  // gone (etcd_presence.h).
  std::chrono::milliseconds presence_timeout{2500};
  bool tls = false;               // protocol=https
  std::string cacert, cert, key;  // TLS files
  RdzvSettings rdzv;              // Config and read_timeout (connect_timeout)
};

// True for --rdzv-backend etcd, etcd-v2 and etcd-v3 (one backend speaking etcd's v3 API).
bool is_etcd_backend(const std::string& backend);

// Errors (kInvalidArgument naming the key and the fix): no or bad endpoints, lease_ttl not a
// whole number of seconds >= 1, presence_timeout neither 0 nor 0.5-3600 seconds, protocol neither
// http nor https, a TLS file with http, an unknown key.
Result<EtcdSettings> etcd_settings(const AgentConfig& config);

// How to reach etcd: http, or https with the TLS files.
etcd::Transport etcd_transport(const EtcdSettings& s);

}  // namespace ddp::agent
