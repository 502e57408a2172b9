#include "rendezvous/bind.h"

#include <boost/asio/ip/v6_only.hpp>

#include "common/host_port.h"

namespace ddp::rendezvous {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// Connections the kernel may hold before they are accepted. It caps this at
// net.core.somaxconn (4096 by default), so a host that expects tens of thousands of workers to
// connect at once raises that sysctl and the daemon follows; SOMAXCONN would pin it to 4096.
constexpr int kListenBacklog = 65535;

Result<tcp::endpoint> resolve_bind_address(const asio::any_io_executor& io, const std::string& host,
                                           std::uint16_t port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return invalid_argument("cannot resolve bind address '" + host + "': " + ec.message() +
                            "; pass an IP address or a resolvable host name to --host");
  }
  return results.begin()->endpoint();
}

Status open_and_bind(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, bool dual_stack,
                     const std::string& port_flag) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && dual_stack) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return io_error("cannot open a listening socket: " + ec.message());
  acceptor.bind(endpoint, ec);
  if (ec == asio::error::address_in_use) {
    return address_in_use("address " + format_endpoint(endpoint.address(), endpoint.port()) +
                          " is already in use; pick another " + port_flag +
                          " or stop the other process");
  }
  if (ec) {
    return io_error("cannot bind " + format_endpoint(endpoint.address(), endpoint.port()) + ": " +
                    ec.message());
  }
  acceptor.listen(kListenBacklog, ec);
  if (ec) return io_error("cannot listen: " + ec.message());
  acceptor.non_blocking(true, ec);  // accept_loop drains bursts with synchronous accepts
  if (ec) return io_error("cannot make the listening socket non-blocking: " + ec.message());
  return Status::ok();
}

}  // namespace

std::string format_endpoint(const asio::ip::address& address, std::uint16_t port) {
  return join_host_port(address.to_string(), port);
}

Status open_listener(tcp::acceptor& acceptor, const std::string& host, std::uint16_t port,
                     const std::string& port_flag) {
  if (host.empty()) {
    Status v6 = open_and_bind(acceptor, tcp::endpoint(tcp::v6(), port), true, port_flag);
    // Fall back to IPv4 only when IPv6 itself is unavailable, not when the port is taken.
    if (v6 || v6.code() == ErrorCode::kAddressInUse) return v6;
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return open_and_bind(acceptor, tcp::endpoint(tcp::v4(), port), false, port_flag);
  }
  auto endpoint = resolve_bind_address(acceptor.get_executor(), host, port);
  if (!endpoint) return endpoint.status();
  return open_and_bind(acceptor, *endpoint, false, port_flag);
}

}  // namespace ddp::rendezvous
