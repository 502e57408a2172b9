#include "agent/membership/rdzv_settings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "common/host_port.h"

namespace ddp::agent {
namespace {

using Seconds = std::chrono::duration<double>;

Result<double> number(const std::string& key, const std::string& value) {
  double out = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(out) || out < 0) {
    return invalid_argument("--rdzv-conf " + key + "=" + value +
                            " is not a number >= 0; give seconds (e.g. " + key + "=30)");
  }
  return out;
}

// host[:port] of --rdzv-endpoint into s.host and s.port.
Status parse_endpoint(const AgentConfig& config, RdzvSettings& s) {
  std::string text = config.rdzv_endpoint;
  if (text.empty()) {
    return invalid_argument("--nnodes " + std::to_string(config.min_nodes) + ":" +
                            std::to_string(config.max_nodes) +
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
  if (config.master_port == 0) {
    return invalid_argument("--rdzv-backend static with --nnodes " +
                            std::to_string(config.max_nodes) +
                            " needs a --master-port every node knows, not 0; pass the same "
                            "--master-port PORT (default 29500) on every node");
  }
  if (config.rdzv_conf.count("is_host") != 0) {
    return invalid_argument(
        "--rdzv-conf is_host does not apply to --rdzv-backend static (node "
        "rank 0 hosts the rendezvous on --master-addr:--master-port); "
        "drop is_host");
  }
  if (config.node_rank < 0 || config.node_rank >= config.max_nodes) {
    return invalid_argument("--node-rank " + std::to_string(config.node_rank) +
                            " is out of range for --nnodes " + std::to_string(config.max_nodes) +
                            "; pass --node-rank 0.." + std::to_string(config.max_nodes - 1) +
                            ", a different one per node");
  }
  s.host = config.master_addr;
  s.port = config.master_port;
  s.node_rank = static_cast<std::uint32_t>(config.node_rank);
  s.is_host = config.node_rank == 0;
  return Status::ok();
}

}  // namespace

Result<RdzvSettings> rdzv_settings(const AgentConfig& config) {
  RdzvSettings s;
  const bool is_static = config.rdzv_backend == "static";
  if (Status st = is_static ? static_endpoint(config, s) : parse_endpoint(config, s); !st) {
    return st;
  }
  s.config.min_nodes = static_cast<std::uint32_t>(config.min_nodes);
  s.config.max_nodes = static_cast<std::uint32_t>(config.max_nodes);
  s.config.max_restarts = static_cast<std::uint32_t>(config.max_restarts);
  s.config.max_no_progress_restarts = static_cast<std::uint32_t>(config.max_no_progress_restarts);
  s.config.no_progress_exit_code = config.no_progress_exit_code;
  s.config.straggler_factor_milli = static_cast<std::uint32_t>(config.straggler_factor_milli);
  s.config.straggler_reports = static_cast<std::uint32_t>(config.straggler_reports);
  s.config.exclude_straggler = config.exclude_straggler;
  if (is_static && s.config.min_nodes != s.config.max_nodes) {
    return invalid_argument("--nnodes " + std::to_string(config.min_nodes) + ":" +
                            std::to_string(config.max_nodes) +
                            " is elastic, which the static backend cannot do; add "
                            "--rdzv-backend c10d or give one number");
  }
  // A static job has no spares and cannot shrink: removing a straggler's node would end it.
  if (is_static && config.exclude_straggler) {
    return invalid_argument(
        "--exclude-straggler does not apply to --rdzv-backend static (its " +
        std::to_string(config.max_nodes) +
        " nodes are pinned, so removing one would end the job); drop --exclude-straggler, or "
        "use --rdzv-backend c10d, where a spare or --nnodes MIN:MAX takes the node's place");
  }
  for (const auto& [key, value] : config.rdzv_conf) {
    if (key == "is_host") {
      s.is_host = value == "1" || value == "true" || value == "True" || value == "TRUE";
      continue;
    }
    if (key == "secret_file") {
      if (value.empty()) {
        return invalid_argument(
            "--rdzv-conf secret_file= is empty; give the path of a file "
            "readable by its owner only (chmod 600)");
      }
      s.secret_file = value;
      continue;
    }
    static constexpr const char* kKnown[] = {"join_timeout",        "timeout",
                                             "last_call_timeout",   "close_timeout",
                                             "keep_alive_interval", "keep_alive_max_attempt",
                                             "read_timeout",        "heartbeat_timeout"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      return invalid_argument("--rdzv-conf: unknown key '" + key +
                              "'; use join_timeout, last_call_timeout, close_timeout, "
                              "keep_alive_interval, keep_alive_max_attempt, read_timeout, is_host, "
                              "secret_file");
    }
    auto n = number(key, value);
    if (!n) return n.status();
    auto ms = std::chrono::duration_cast<rendezvous::membership::Duration>(Seconds(*n));
    if (key == "join_timeout" || key == "timeout") {
      s.config.join_timeout = ms;
    } else if (key == "last_call_timeout") {
      s.config.last_call_timeout = ms;
    } else if (key == "close_timeout") {
      s.config.close_timeout = ms;
    } else if (key == "keep_alive_interval") {
      s.config.keep_alive_interval = ms;
    } else if (key == "keep_alive_max_attempt") {
      s.config.keep_alive_max_attempt = static_cast<std::uint32_t>(*n);
    } else if (key == "read_timeout") {
      s.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(Seconds(*n));
    }  // heartbeat_timeout (torchrun's etcd key): accepted, the keep-alive budget rules
  }
  if (Status st = rendezvous::membership::validate(s.config); !st) return st;
  return s;
}

}  // namespace ddp::agent
