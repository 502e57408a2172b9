#include "agent/membership/etcd_settings.h"

#include <map>
#include <string_view>

#include "common/text.h"

namespace ddp::agent {

// The etcd keys of --rdzv-conf; the others are rdzv_settings' (rdzv_key).
constexpr std::string_view kPrefix = "etcd_prefix", kLeaseTtl = "lease_ttl",
                           kPresenceTimeout = "presence_timeout", kProtocol = "protocol",
                           kCacert = "cacert", kCert = "cert", kKey = "key";

// The keys an unknown key's message names.
constexpr std::string_view kKnownKeys =
    "join_timeout, last_call_timeout, close_timeout, read_timeout, etcd_prefix, lease_ttl, "
    "protocol, cacert, cert, key";

bool is_etcd_backend(const std::string& backend) {
  return backend == "etcd" || backend == "etcd-v2" || backend == "etcd-v3";
}

Result<EtcdSettings> etcd_settings(const AgentConfig& config) {
  EtcdSettings s;
  auto endpoints = etcd::parse_endpoints(config.rdzv_endpoint);
  if (!endpoints) return endpoints.status();
  s.endpoints = std::move(endpoints).value();
  // The keys c10d shares go through apply_rdzv_conf (same parsing and messages) after the etcd
  // keys, on the job's Config.
  s.rdzv.host = s.endpoints.front().host;
  s.rdzv.port = s.endpoints.front().port;
  s.rdzv.config = config.job;
  std::map<std::string, std::string> shared;
  bool tls_files = false;
  for (const auto& [key, value] : config.rdzv_conf) {
    if (key == kPrefix) {
      if (value.empty() || value.find('\0') != std::string::npos) {
        return invalid_argument(
            "--rdzv-conf etcd_prefix is empty; give a key prefix such as /ddprun");
      }
      s.prefix = value;
      while (s.prefix.size() > 1 && s.prefix.back() == '/') s.prefix.pop_back();
    } else if (key == kLeaseTtl) {
      const auto n = parse_number<long long>(value);
      if (!n || *n < 1 || *n > 3600) {
        return invalid_argument("--rdzv-conf lease_ttl=" + value +
                                " must be whole seconds from 1 to 3600 (e.g. lease_ttl=5)");
      }
      s.lease_ttl = std::chrono::seconds(*n);
    } else if (key == kPresenceTimeout) {
      return invalid_argument(
          "--rdzv-conf presence_timeout: removed; a lost node is noticed at lease_ttl, lower "
          "it with --rdzv-conf lease_ttl=SECONDS");
    } else if (key == kProtocol) {
      if (value != "http" && value != "https") {
        return invalid_argument("--rdzv-conf protocol=" + value + ": use http or https");
      }
      s.tls = value == "https";
    } else if (key == kCacert || key == kCert || key == kKey) {
      (key == kCacert ? s.cacert : key == kCert ? s.cert : s.key) = value;
      tls_files = true;
    } else if (key == rdzv_key::kIsHost) {
      return invalid_argument(
          "--rdzv-conf is_host does not apply to --rdzv-backend etcd (the agents elect the "
          "host through etcd); drop is_host");
    } else {
      shared[key] = value;
    }
  }
  if (tls_files && !s.tls) {
    return invalid_argument(
        "--rdzv-conf cacert/cert/key are for TLS; add protocol=https (or drop them)");
  }
  if (s.cert.empty() != s.key.empty()) {
    return invalid_argument(
        "--rdzv-conf cert and key go together (the client certificate and "
        "its private key); give both or neither");
  }
  if (Status st = apply_rdzv_conf(shared, kKnownKeys, s.rdzv); !st) return st;
  // The elected host's daemon removes a silent node after lease_ttl, as etcd does a host,
  // unless the heartbeat keys were given.
  if (!shared.count(rdzv_key::kKeepAliveInterval) &&
      !shared.count(rdzv_key::kKeepAliveMaxAttempt)) {
    s.rdzv.config.keep_alive_interval =
        std::chrono::duration_cast<std::chrono::milliseconds>(s.lease_ttl) / 3;
    s.rdzv.config.keep_alive_max_attempt = 3;
  }
  return s;
}

etcd::Transport etcd_transport(const EtcdSettings& s) {
  return {.tls = s.tls, .cacert = s.cacert, .cert = s.cert, .key = s.key};
}

}  // namespace ddp::agent
