// ddp-rendezvous: the standalone TCPStore-compatible store daemon. Thin main: options,
// logging, run_daemon(), exit code.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "common/logging.h"
#include "rendezvous/connection_limits.h"
#include "rendezvous/daemon.h"

int main(int argc, char** argv) {
  ddp::rendezvous::DaemonOptions options;
  options.server.port = 29400;
  std::string log_level = "info";
  CLI::App app{"ddp-rendezvous: TCPStore-compatible store daemon (PyTorch 1.13 and >= 2.2)"};
  app.add_option("--host", options.server.host, "Bind address (default: all interfaces)");
  app.add_option("--port", options.server.port, "TCP port; 0 picks a free one")
      ->capture_default_str();
  app.add_option("--port-file", options.port_file, "Write the bound port to this file");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app.add_option("--max-key-bytes", options.server.limits.max_key_bytes, "Largest key")
      ->capture_default_str();
  app.add_option("--max-value-bytes", options.server.limits.max_value_bytes, "Largest value")
      ->capture_default_str();
  app.add_option("--max-keys", options.server.limits.max_keys_per_query,
                 "Most keys in one CHECK/WAIT/MULTI_GET/MULTI_SET")
      ->capture_default_str();
  app.add_option(
      "--status-port,--status_port", options.status_port,
      "Serve read-only HTTP status on this port (0 picks a free one; bound like --host): "
      "/metrics (Prometheus), /api/jobs (JSON), / (a page); see docs/status.md");
  app.add_option("--status-port-file", options.status_port_file,
                 "Write the bound status port to this file")
      ->needs("--status-port");
  ddp::rendezvous::ConnectionFlags connection;
  app.add_option("--max-connections", connection.max_connections,
                 "Most open connections; more are closed at once (default 0: the open-file "
                 "limit minus max(64, limit/8))");
  app.add_option("--max-connections-per-peer", connection.max_per_peer,
                 "Most open connections from one IP address (default 0: --max-connections "
                 "minus the smaller of half of it and 1024)");
  app.add_option("--first-request-timeout", connection.first_request_timeout_s,
                 "Seconds a new connection has to complete its first request once it sent a "
                 "part of one; 0 turns it off. A connection that sent nothing, or idles after "
                 "its first request, is never closed for it (docs/security.md)")
      ->capture_default_str();
  app.add_option("--store-allow", connection.store_allow,
                 "CIDR[,CIDR...]: only peers in these networks (or 'loopback') may use TCPStore "
                 "operations; others are disconnected. Native rendezvous requests of agents are "
                 "allowed from anywhere (default: TCPStore operations from anywhere)");
  app.add_flag("--require-secret", options.server.auth.require_secret,
               "Refuse jobs without a secret (docs/security.md, \"Job secrets\")");
  // Removed flags, hidden: refused below with what replaced them.
  std::string open_window;
  CLI::Option* removed_open_window =
      app.add_option("--open-window", open_window)->expected(0, 1)->group("");
  CLI11_PARSE(app, argc, argv);
  if (removed_open_window->count() > 0) {
    std::cerr << "ddp-rendezvous: --open-window: removed; agents always answer one challenge per "
                 "connection\n";
    return 2;
  }
  auto limits = ddp::rendezvous::connection_limits_from_flags(connection);
  if (!limits) {
    std::cerr << "ddp-rendezvous: " << limits.status().message() << '\n';
    return 2;
  }
  options.server.connections = std::move(limits).value();

  if (auto logging = ddp::init_logging("ddp-rendezvous", log_level); !logging) {
    std::cerr << "ddp-rendezvous: " << logging.message() << '\n';
    return 2;
  }
  ddp::Status status = ddp::rendezvous::run_daemon(options, std::cout);
  if (!status) {
    std::cerr << "ddp-rendezvous: error: " << status.message() << '\n';
    return 1;
  }
  return 0;
}
