#include "rendezvous/daemon.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>

#include "common/host_port.h"
#include "proc/open_file_limit.h"
#include "proc/signal_router.h"
#include "rendezvous/status/status_server.h"

namespace ddp::rendezvous {
namespace {

Status write_port_file(const std::string& path, std::uint16_t port) {
  // Write then rename, so a script polling for the file never reads a partial number.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << '\n';
    if (!out.flush()) return io_error("cannot write --port-file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return io_error("cannot rename " + tmp + " to --port-file " + path);
  }
  return Status::ok();
}

}  // namespace

Status run_daemon(const DaemonOptions& options, std::ostream& ready) {
  // Every connection is a descriptor: the soft open-file limit lifted to the hard one.
  spdlog::debug("open-file limit {}", proc::raise_open_file_limit());
  boost::asio::io_context io(1);
  // Signals are caught from before the ready line on, so a SIGTERM sent right after it
  // still shuts down cleanly.
  std::unique_ptr<Server> server;
  std::unique_ptr<status::StatusServer> status_server;
  proc::SignalRouter signals(io);
  signals.route({SIGTERM, SIGINT}, [&](int signo) {
    spdlog::info("signal {} received; shutting down", signo);
    signals.cancel();
    if (status_server) status_server->stop();
    if (server) server->stop();
    io.stop();
  });
  auto started = Server::start(io, options.server);
  if (!started) return started.status();
  server = std::move(started).value();
  if (!options.port_file.empty()) {
    Status written = write_port_file(options.port_file, server->port());
    if (!written) return written;
  }
  if (options.status_port) {
    status::StatusOptions status_options;
    status_options.host = options.server.host;
    status_options.port = *options.status_port;
    auto started_status = status::StatusServer::start(io, *server, status_options);
    if (!started_status) return started_status.status();
    status_server = std::move(started_status).value();
    if (!options.status_port_file.empty()) {
      Status written = write_port_file(options.status_port_file, status_server->port());
      if (!written) return written;
    }
    ready << "status on http://" << join_host_port(status_server->host(), status_server->port())
          << "/\n";
  }
  ready << "listening on " << join_host_port(server->host(), server->port()) << std::endl;

  io.run();
  // The status server first: its connections read the store server's state.
  status_server.reset();
  return Status::ok();
}

}  // namespace ddp::rendezvous
