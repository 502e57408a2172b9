// ddp-rendezvous: the standalone TCPStore-compatible store daemon. Thin main: options,
// logging, run_daemon(), exit code.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/logging.h"
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
  app.add_flag("--require-secret", options.server.auth.require_secret,
               "Refuse jobs without a secret (docs/security.md, \"Job secrets\")");
  CLI11_PARSE(app, argc, argv);

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
