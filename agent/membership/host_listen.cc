#include "agent/membership/host_listen.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>

namespace ddp::agent {

std::string store_bind_host(const std::string& master_addr) {
  boost::system::error_code not_literal;
  boost::asio::ip::make_address(master_addr, not_literal);
  return not_literal ? std::string() : master_addr;
}

Result<std::unique_ptr<rendezvous::Server>> listen_as_host(boost::asio::io_context& io,
                                                           const std::string& addr,
                                                           std::uint16_t port,
                                                           rendezvous::ServerOptions base) {
  rendezvous::ServerOptions options = std::move(base);
  options.host = addr;
  options.port = port;
  auto exact = rendezvous::Server::start(io, options);
  if (!exact) return exact.status();
  boost::system::error_code not_literal;
  boost::asio::ip::make_address(addr, not_literal);
  if (!not_literal) return exact;

  const std::uint16_t bound = (*exact)->port();
  (*exact)->stop();
  exact->reset();
  options.host.clear();
  options.port = bound;
  auto any = rendezvous::Server::start(io, options);
  if (any) return any;
  spdlog::warn("cannot listen on port {} of every interface ({}); serving {}:{} only", bound,
               any.status().message(), addr, bound);
  options.host = addr;
  return rendezvous::Server::start(io, options);
}

}  // namespace ddp::agent
