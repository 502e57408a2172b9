// steps::resolve_rendezvous: node counts and how this node finds the others.
#include "agent/membership/rdzv_settings.h"
#include "common/host_port.h"
#include "launcher/option_steps.h"
#include "launcher/option_values.h"

namespace ddp::launcher::steps {

Status resolve_rendezvous(const RawOptions& raw, const LaunchEnvironment& environment,
                          Invocation& out) {
  auto& config = out.config;
  const RawValue& nnodes = raw.at("nnodes");
  std::pair<int, int> nodes;
  if (Status s = take(nnodes, parse_nnodes(nnodes.text), nodes); !s) return s;
  config.job.min_nodes = nodes.first;
  config.job.max_nodes = nodes.second;

  bool standalone = false;
  if (Status s = take(raw.at("standalone"), flag(raw, "standalone"), standalone); !s) return s;
  const RawValue& backend = raw.at("rdzv_backend");
  const RawValue& endpoint = raw.at("rdzv_endpoint");
  const RawValue& run_id = raw.at("rdzv_id");
  const bool etcd =
      backend.text == "etcd" || backend.text == "etcd-v2" || backend.text == "etcd-v3";
  if (backend.text != "static" && backend.text != "c10d" && !etcd) {
    return from(backend, invalid_argument("--rdzv-backend: unknown backend '" + backend.text +
                                          "'; use static, c10d or etcd"));
  }
  if (etcd && endpoint.text.empty()) {
    return from(endpoint, invalid_argument("--rdzv-backend " + backend.text +
                                           " needs --rdzv-endpoint HOST[:PORT][,HOST[:PORT]...] "
                                           "(etcd client endpoints, default port 2379)"));
  }
  // etcd: a comma-separated list, checked by the agent (agent/etcd_settings.h).
  if (!endpoint.text.empty() && !etcd) {
    if (Status s = from(endpoint, check_endpoint("--rdzv-endpoint", endpoint.text)); !s) return s;
  }
  if (run_id.text.empty()) {
    return from(run_id, invalid_argument("--rdzv-id is empty; give a job id shared by every node"));
  }
  config.rdzv_backend = backend.text;
  config.rdzv_endpoint = endpoint.text;
  config.run_id = run_id.text;
  const RawValue& conf = raw.at("rdzv_conf");
  if (Status s = take(conf, parse_rdzv_conf(conf.text), config.rdzv_conf); !s) return s;

  const RawValue& node_rank = raw.at("node_rank");
  auto rank = parse_integer(node_rank.origin, node_rank.text, 0, config.job.max_nodes - 1);
  if (!rank) {
    return from(node_rank, invalid_argument(rank.status().message() + " (--nnodes " + nnodes.text +
                                            " allows ranks 0 to " +
                                            std::to_string(config.job.max_nodes - 1) + ")"));
  }
  config.node_rank = static_cast<int>(*rank);
  const RawValue& addr = raw.at("master_addr");
  if (Status s = from(addr, check_endpoint("--master-addr", addr.text)); !s) return s;
  config.master_addr = addr.text;
  const RawValue& port = raw.at("master_port");
  if (Status s = take_integer(port, 0, 65535, config.master_port); !s) return s;
  config.master_port_given = port.given && config.master_port != 0;
  const RawValue& local_addr = raw.at("local_addr");
  if (local_addr.given && local_addr.text.empty()) {
    return invalid_argument("--local-addr is empty; give this node's address or drop it");
  }
  config.local_addr = local_addr.text;
  const RawValue& status_port = raw.at("status_port");
  if (status_port.given) {
    if (Status s = take_integer(status_port, 0, 65535, config.status_port.emplace()); !s) return s;
  }

  if (standalone) {
    if (config.job.max_nodes > 1) {
      return invalid_argument("--standalone runs a single node but --nnodes is " + nnodes.text +
                              "; drop --standalone or use --nnodes 1");
    }
    for (const RawValue* v : {&backend, &endpoint, &run_id}) {
      if (v->given) out.notices.push_back("--standalone ignores " + v->origin + "=" + v->text);
    }
    config.standalone = true;
    config.rdzv_backend = "c10d";
    config.rdzv_endpoint.clear();  // the agent's embedded rendezvous picks a free port
    config.run_id = environment.standalone_run_id.empty() ? "none" : environment.standalone_run_id;
    return Status::ok();
  }
  if (config.rdzv_backend == "static") {
    // Only when chosen: static is also the default, which fan-out (--hosts) turns into c10d.
    if (backend.given && config.rdzv_conf.count(agent::rdzv_key::kIsHost) != 0) {
      return from(conf, invalid_argument("--rdzv-conf is_host does not apply to --rdzv-backend "
                                         "static (node rank 0 hosts the rendezvous on "
                                         "--master-addr:--master-port); drop is_host"));
    }
    if (config.job.min_nodes != config.job.max_nodes) {
      return invalid_argument("--nnodes " + nnodes.text + " is elastic, which the static " +
                              "backend cannot do; add --rdzv-backend c10d or give one number");
    }
    // torchrun's static rendezvous uses --rdzv-endpoint, when given, as the master address.
    if (endpoint.given && !endpoint.text.empty()) {
      // Checked above (check_endpoint), so it parses; a port of 0 means "not given".
      auto parsed = parse_host_port(endpoint.text, BareIpv6::kRefused, 0);
      if (!parsed) return from(endpoint, parsed.status());
      config.master_addr = parsed->host;
      if (parsed->port) {
        config.master_port = *parsed->port;
        config.master_port_given = config.master_port != 0;
      }
    }
  }
  return Status::ok();
}

}  // namespace ddp::launcher::steps
