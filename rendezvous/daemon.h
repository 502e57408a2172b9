// The `ddp-rendezvous` daemon: one store Server on one io_context thread until SIGTERM or
// SIGINT. Called by daemon_main.cc after option parsing and logging set-up.
#pragma once

#include <ostream>
#include <string>

#include "common/status.h"
#include "rendezvous/server.h"

namespace ddp::rendezvous {

struct DaemonOptions {
  ServerOptions server;
  std::string port_file;  // when non-empty, the bound port is written here (then renamed in)
};

// Binds, writes the port file, prints exactly one "listening on HOST:PORT" line to `ready`
// (flushed), serves until SIGTERM/SIGINT, then stops cleanly. Returns OK after a signal;
// kIo when the port is taken or the port file cannot be written; kInvalidArgument when the
// connection caps do not fit the open-file limit (raised to the hard limit first).
Status run_daemon(const DaemonOptions& options, std::ostream& ready);

}  // namespace ddp::rendezvous
