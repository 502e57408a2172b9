#include "agent/membership/etcd_settings.h"

#include <charconv>

namespace ddp::agent {

bool is_etcd_backend(const std::string& backend) {
  return backend == "etcd" || backend == "etcd-v2" || backend == "etcd-v3";
}

Result<EtcdSettings> etcd_settings(const AgentConfig& config) {
  EtcdSettings s;
  auto endpoints = etcd::parse_endpoints(config.rdzv_endpoint);
  if (!endpoints) return endpoints.status();
  s.endpoints = std::move(endpoints).value();
  // The keys c10d shares go through rdzv_settings (same parsing and messages); the etcd keys
  // are taken out first.
  AgentConfig shared = config;
  shared.rdzv_backend = "c10d";
  shared.rdzv_endpoint = s.endpoints.front().to_string();
  shared.rdzv_conf.clear();
  bool tls_files = false;
  for (const auto& [key, value] : config.rdzv_conf) {
    if (key == "etcd_prefix") {
      if (value.empty() || value.find('\0') != std::string::npos) {
        return invalid_argument(
            "--rdzv-conf etcd_prefix is empty; give a key prefix such as /ddprun");
      }
      s.prefix = value;
      while (s.prefix.size() > 1 && s.prefix.back() == '/') s.prefix.pop_back();
    } else if (key == "lease_ttl") {
      long long n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 3600) {
        return invalid_argument("--rdzv-conf lease_ttl=" + value +
                                " must be whole seconds from 1 to 3600 (e.g. lease_ttl=5)");
      }
      s.lease_ttl = std::chrono::seconds(n);
    } else if (key == "presence_timeout") {
      return invalid_argument(
          "--rdzv-conf presence_timeout: removed; a lost node is noticed at lease_ttl, lower "
          "it with --rdzv-conf lease_ttl=SECONDS");
    } else if (key == "protocol") {
      if (value != "http" && value != "https") {
        return invalid_argument("--rdzv-conf protocol=" + value + ": use http or https");
      }
      s.tls = value == "https";
    } else if (key == "cacert" || key == "cert" || key == "key") {
      (key == "cacert" ? s.cacert : key == "cert" ? s.cert : s.key) = value;
      tls_files = true;
    } else if (key == "is_host") {
      return invalid_argument(
          "--rdzv-conf is_host does not apply to --rdzv-backend etcd (the agents elect the "
          "host through etcd); drop is_host");
    } else {
      shared.rdzv_conf[key] = value;
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
  auto rdzv = rdzv_settings(shared);
  if (!rdzv) {
    std::string m = rdzv.status().message();
    if (auto pos = m.find("use join_timeout"); pos != std::string::npos) {
      m = m.substr(0, pos) +
          "use join_timeout, last_call_timeout, close_timeout, read_timeout, etcd_prefix, "
          "lease_ttl, protocol, cacert, cert, key";
    }
    return Status(rdzv.status().code(), m);
  }
  s.rdzv = std::move(rdzv).value();
  // The elected host's daemon removes a silent node after lease_ttl, as etcd does a host,
  // unless the heartbeat keys were given.
  if (!shared.rdzv_conf.count("keep_alive_interval") &&
      !shared.rdzv_conf.count("keep_alive_max_attempt")) {
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
