// What a multi-node agent takes from --rdzv-endpoint and --rdzv-conf: where the rendezvous
// daemon is, whether this agent hosts it (torchrun's is_host), and the membership Config every
// node sends with its JOIN (AgentConfig::job with the timeouts --rdzv-conf sets). Pure: no I/O.
//
// Static backend (--rdzv-backend static --node-rank R --master-addr A --master-port P): the
// daemon is A:P, node rank 0 hosts it (and it is the workers' store too), every node pins
// its group rank to R, and --nnodes N is MIN = MAX = N.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

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

// The --rdzv-conf keys of the c10d and static backends (etcd takes them too, but is_host):
// timeout is join_timeout's torchrun name; heartbeat_timeout (torchrun's etcd key) is accepted,
// the keep-alive budget rules.
namespace rdzv_key {
inline constexpr char kJoinTimeout[] = "join_timeout", kTimeout[] = "timeout",
                      kLastCallTimeout[] = "last_call_timeout", kCloseTimeout[] = "close_timeout",
                      kKeepAliveInterval[] = "keep_alive_interval",
                      kKeepAliveMaxAttempt[] = "keep_alive_max_attempt",
                      kReadTimeout[] = "read_timeout", kHeartbeatTimeout[] = "heartbeat_timeout",
                      kIsHost[] = "is_host", kSecretFile[] = "secret_file";
}  // namespace rdzv_key
// Whether `name` is one of them.
bool is_rdzv_key(std::string_view name);

// Applies the --rdzv-conf pairs `conf` to s (the timeouts of s.config, connect_timeout,
// is_host, secret_file), then validate()s s.config. Errors (kInvalidArgument): an unknown key,
// "--rdzv-conf: unknown key 'K'; use " + known_keys; an empty secret_file; a value that is not
// a number of seconds; a Config that validate() refuses.
Status apply_rdzv_conf(const std::map<std::string, std::string>& conf, std::string_view known_keys,
                       RdzvSettings& s);

// Errors (kInvalidArgument, naming the option and the fix): c10d without --rdzv-endpoint, a
// bad port; static with --master-port 0, is_host, a --node-rank out of range, an elastic
// --nnodes or --exclude-straggler; an empty secret_file, an unknown --rdzv-conf key, a value
// that is not a number of seconds, a Config that validate() refuses.
Result<RdzvSettings> rdzv_settings(const AgentConfig& config);

}  // namespace ddp::agent
