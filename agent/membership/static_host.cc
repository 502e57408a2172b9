#include "agent/membership/static_host.h"

#include <spdlog/spdlog.h>

#include "agent/membership/host_listen.h"

namespace ddp::agent {
namespace {

bool in_use(const Status& s) { return s.code() == ErrorCode::kAddressInUse; }

Status taken(const std::string& addr, std::uint16_t port) {
  return io_error("port " + std::to_string(port) + " on " + addr +
                  " is taken (another program, or another agent with --node-rank 0); stop the "
                  "process holding it, or pass a free --master-port (the same on every node)");
}

}  // namespace

Result<StaticHost> start_static_host(boost::asio::io_context& io, const std::string& addr,
                                     std::uint16_t port, const rendezvous::ServerOptions& base) {
  auto server = listen_as_host(io, addr, port, base);
  if (server) return StaticHost{std::move(server).value(), addr};
  if (in_use(server.status())) return taken(addr, port);

  // Not this machine's address (or not resolvable here): every interface, same port.
  rendezvous::ServerOptions options = base;
  options.host.clear();
  options.port = port;
  auto any = rendezvous::Server::start(io, options);
  if (!any) {
    if (in_use(any.status())) return taken(addr, port);
    return io_error("node rank 0 cannot listen on --master-addr " + addr + " port " +
                    std::to_string(port) + " (" + server.status().message() + ") nor on port " +
                    std::to_string(port) + " of every interface (" + any.status().message() +
                    "); run node rank 0 on the machine " + addr + " names");
  }
  spdlog::warn(
      "--master-addr {} is not an address of this machine ({}); listening on port {} of every "
      "interface: the other nodes must reach this machine at {}",
      addr, server.status().message(), port, addr);
  return StaticHost{std::move(any).value(), "127.0.0.1"};
}

}  // namespace ddp::agent
