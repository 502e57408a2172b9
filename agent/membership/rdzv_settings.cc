#include "agent/membership/rdzv_settings.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "common/host_port.h"
#include "common/text.h"

namespace ddp::agent {
namespace {

using Seconds = std::chrono::duration<double>;

Result<double> number(const std::string& key, const std::string& value) {
  const auto out = parse_number<double>(value);
  if (!out || !std::isfinite(*out) || *out < 0) {
    return invalid_argument("--rdzv-conf " + key + "=" + value +
                            " is not a number >= 0; give seconds (e.g. " + key + "=30)");
  }
  return *out;
}

// The keys an unknown key's message names.
constexpr std::string_view kKnownKeys =
    "join_timeout, last_call_timeout, close_timeout, keep_alive_interval, "
    "keep_alive_max_attempt, read_timeout, is_host, secret_file";

// host[:port] of --rdzv-endpoint into s.host and s.port.
Status parse_endpoint(const AgentConfig& config, RdzvSettings& s) {
  std::string text = config.rdzv_endpoint;
  if (text.empty()) {
    return invalid_argument("--nnodes " + std::to_string(config.job.min_nodes) + ":" +
                            std::to_string(config.job.max_nodes) +
                            " needs --rdzv-endpoint HOST[:PORT] (the same on every node)");
  }
  auto parsed = parse_host_port(text);
  if (!parsed) {
    return invalid_argument("--rdzv-endpoint " + text + ": " + parsed.status().message() +
                            " (HOST[:PORT], default 29400)");
  }
  s.host = parsed->host;
  s.port = parsed->port.value_or(s.port);
  return Status::ok();
}

// --master-addr / --master-port / --node-rank of the static backend.
Status static_endpoint(const AgentConfig& config, RdzvSettings& s) {
  const std::uint32_t nodes = config.job.max_nodes;
  if (config.master_port == 0) {
    return invalid_argument("--rdzv-backend static with --nnodes " + std::to_string(nodes) +
                            " needs a --master-port every node knows, not 0; pass the same "
                            "--master-port PORT (default 29500) on every node");
  }
  if (config.rdzv_conf.count(rdzv_key::kIsHost) != 0) {
    return invalid_argument(
        "--rdzv-conf is_host does not apply to --rdzv-backend static (node "
        "rank 0 hosts the rendezvous on --master-addr:--master-port); "
        "drop is_host");
  }
  if (config.node_rank < 0 || static_cast<std::uint32_t>(config.node_rank) >= nodes) {
    return invalid_argument("--node-rank " + std::to_string(config.node_rank) +
                            " is out of range for --nnodes " + std::to_string(nodes) +
                            "; pass --node-rank 0.." + std::to_string(nodes - 1) +
                            ", a different one per node");
  }
  s.host = config.master_addr;
  s.port = config.master_port;
  s.node_rank = static_cast<std::uint32_t>(config.node_rank);
  s.is_host = config.node_rank == 0;
  return Status::ok();
}

}  // namespace

bool is_rdzv_key(std::string_view name) {
  namespace k = rdzv_key;
  constexpr std::string_view kAll[] = {
      k::kJoinTimeout,  k::kTimeout,           k::kLastCallTimeout,
      k::kCloseTimeout, k::kKeepAliveInterval, k::kKeepAliveMaxAttempt,
      k::kReadTimeout,  k::kHeartbeatTimeout,  k::kIsHost,
      k::kSecretFile};
  return std::find(std::begin(kAll), std::end(kAll), name) != std::end(kAll);
}

Status apply_rdzv_conf(const std::map<std::string, std::string>& conf, std::string_view known_keys,
                       RdzvSettings& s) {
  namespace k = rdzv_key;
  for (const auto& [key, value] : conf) {
    if (key == k::kIsHost) {
      s.is_host = value == "1" || value == "true" || value == "True" || value == "TRUE";
      continue;
    }
    if (key == k::kSecretFile) {
      if (value.empty()) {
        return invalid_argument(
            "--rdzv-conf secret_file= is empty; give the path of a file "
            "readable by its owner only (chmod 600)");
      }
      s.secret_file = value;
      continue;
    }
    if (!is_rdzv_key(key)) {
      return invalid_argument("--rdzv-conf: unknown key '" + key + "'; use " +
                              std::string(known_keys));
    }
    auto n = number(key, value);
    if (!n) return n.status();
    auto ms = std::chrono::duration_cast<rendezvous::membership::Duration>(Seconds(*n));
    if (key == k::kJoinTimeout || key == k::kTimeout) {
      s.config.join_timeout = ms;
    } else if (key == k::kLastCallTimeout) {
      s.config.last_call_timeout = ms;
    } else if (key == k::kCloseTimeout) {
      s.config.close_timeout = ms;
    } else if (key == k::kKeepAliveInterval) {
      s.config.keep_alive_interval = ms;
    } else if (key == k::kKeepAliveMaxAttempt) {
      s.config.keep_alive_max_attempt = static_cast<std::uint32_t>(*n);
    } else if (key == k::kReadTimeout) {
      s.connect_timeout = ms;
    }  // heartbeat_timeout: accepted, the keep-alive budget rules
  }
  return rendezvous::membership::validate(s.config);
}

Result<RdzvSettings> rdzv_settings(const AgentConfig& config) {
  RdzvSettings s;
  const bool is_static = config.rdzv_backend == "static";
  if (Status st = is_static ? static_endpoint(config, s) : parse_endpoint(config, s); !st) {
    return st;
  }
  s.config = config.job;
  if (is_static && s.config.min_nodes != s.config.max_nodes) {
    return invalid_argument("--nnodes " + std::to_string(s.config.min_nodes) + ":" +
                            std::to_string(s.config.max_nodes) +
                            " is elastic, which the static backend cannot do; add "
                            "--rdzv-backend c10d or give one number");
  }
  // A static job has no spares and cannot shrink: removing a straggler's node would end it.
  if (is_static && s.config.exclude_straggler) {
    return invalid_argument(
        "--exclude-straggler does not apply to --rdzv-backend static (its " +
        std::to_string(s.config.max_nodes) +
        " nodes are pinned, so removing one would end the job); drop --exclude-straggler, or "
        "use --rdzv-backend c10d, where a spare or --nnodes MIN:MAX takes the node's place");
  }
  if (Status st = apply_rdzv_conf(config.rdzv_conf, kKnownKeys, s); !st) return st;
  return s;
}

}  // namespace ddp::agent
