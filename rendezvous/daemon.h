// The `ddp-rendezvous` daemon: one store Server, and its status port when asked, on one
// io_context thread until SIGTERM or SIGINT. Called by daemon_main.cc after option parsing and
// logging set-up. Built into the program, not the library (the status port is built on it).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "common/status.h"
#include "rendezvous/server.h"

namespace ddp::rendezvous {

struct DaemonOptions {
  ServerOptions server;
  std::string port_file;  // when non-empty, the bound port is written here (then renamed in)
  // --status-port: serve the status endpoint (rendezvous/status/) there, on the store's host,
  // with its default limits; unset = none.
  std::optional<std::uint16_t> status_port;
  std::string status_port_file;  // like port_file, for the status port
};

// Binds, writes the port file(s), prints exactly one "listening on HOST:PORT" line to `ready`
// (flushed; with a status port, a "status on http://HOST:PORT/" line before it), serves until
// SIGTERM/SIGINT, then stops cleanly. Returns OK after a signal; kAddressInUse when a port is
// taken; kIo when a port file cannot be written; kInvalidArgument when the connection caps do
// not fit the open-file limit (raised to the hard limit first).
Status run_daemon(const DaemonOptions& options, std::ostream& ready);

}  // namespace ddp::rendezvous
