// listen_as_host: an IP literal is served on that address only; a host name is served on
// every interface once binding it proved it is this machine's. 127.0.0.2 stands in for
// "another address of this machine" (all of 127/8 is loopback on Linux).
#include "agent/membership/host_listen.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

bool reachable(asio::io_context& io, const char* addr, std::uint16_t port) {
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address(addr), port), ec);
  return !ec;
}

TEST_CASE("an IP literal host is served on that address only", "[host_listen]") {
  asio::io_context io;
  auto server = listen_as_host(io, "127.0.0.1", 0);
  REQUIRE(server);
  const auto port = (*server)->port();
  CHECK(reachable(io, "127.0.0.1", port));
  CHECK_FALSE(reachable(io, "127.0.0.2", port));
  (*server)->stop();
}

TEST_CASE("a host name is served on every interface", "[host_listen]") {
  asio::io_context io;
  auto server = listen_as_host(io, "localhost", 0);
  REQUIRE(server);
  const auto port = (*server)->port();
  CHECK(reachable(io, "127.0.0.1", port));
  CHECK(reachable(io, "127.0.0.2", port));
  (*server)->stop();
}

TEST_CASE("a name that is not this machine's is refused", "[host_listen]") {
  asio::io_context io;
  // 192.0.2.1 (TEST-NET-1) is never a local address; as a literal it cannot be bound.
  auto server = listen_as_host(io, "192.0.2.1", 0);
  CHECK_FALSE(server);
}

}  // namespace
}  // namespace ddp::agent
