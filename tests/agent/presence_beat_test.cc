// The presence connections' silence check (presence_tcp.h): both ends write beats and arm
// TCP_USER_TIMEOUT; beats are never taken for a bye; a read error is judged by what it says
// of the peer. (A machine that stops acknowledging is tested with a network namespace cut
// off: etcd_it_EtcdNetnsTest.)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <optional>
#include <vector>

#include "agent/presence_link.h"
#include "agent/presence_server.h"
#include "agent/presence_tcp.h"
#include "tests/agent/presence_fixture.h"

namespace ddp::agent {
namespace {

using namespace presence_fixture;

// Reads from `socket` until `count` bytes arrived (or 5 s); what arrived.
std::string read_bytes(asio::io_context& io, tcp::socket& socket, std::size_t count) {
  std::string got;
  bool done = false;
  asio::async_read(socket, asio::dynamic_buffer(got), asio::transfer_exactly(count),
                   [&](boost::system::error_code, std::size_t) { done = true; });
  REQUIRE(run_until(io, [&] { return done; }));
  return got;
}

unsigned user_timeout_of(tcp::socket& socket) {
  unsigned ms = 0;
  socklen_t len = sizeof ms;
  REQUIRE(::getsockopt(socket.native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, &len) == 0);
  return ms;
}

TEST_CASE("a read error is judged by what it says of the peer", "[presence]") {
  namespace e = asio::error;
  CHECK(judge_read_error(e::eof) == PeerEnd::kClosed);
  CHECK(judge_read_error(e::connection_reset) == PeerEnd::kClosed);
  CHECK(judge_read_error(e::timed_out) == PeerEnd::kUnreachable);
  CHECK(judge_read_error(e::host_unreachable) == PeerEnd::kUnreachable);
  CHECK(judge_read_error(e::network_unreachable) == PeerEnd::kUnreachable);
  CHECK(judge_read_error(e::operation_aborted) == PeerEnd::kUnknown);
  CHECK(judge_read_error(e::bad_descriptor) == PeerEnd::kUnknown);
  CHECK_FALSE(holds_bye(""));
  CHECK_FALSE(holds_bye("...."));
  CHECK(holds_bye("..b"));
  CHECK(holds_bye(std::string(kBye)));
  CHECK(beat_interval(1000ms) == 250ms);
  CHECK(beat_interval(100ms) == 50ms);
}

TEST_CASE("arming the silence check sets TCP_USER_TIMEOUT and never blocks a beat", "[presence]") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  REQUIRE(arm_silence_check(a, 1500ms));
  CHECK(user_timeout_of(a) == 1500);
  CHECK(a.non_blocking());
  send_beat(a);
  CHECK(read_bytes(io, b, 1) == std::string(1, kBeat));
}

TEST_CASE("the server beats to its agents, and their beats are no bye", "[presence]") {
  asio::io_context io;
  std::vector<std::pair<std::string, PeerEnd>> gone;
  PresenceServer server(io, accept_all, [&](const PresenceHello& h, PeerEnd end) {
    gone.emplace_back(h.node_key, end);
  });
  PresenceServer::Limits limits;
  limits.silence_timeout = 200ms;  // beats every 50 ms
  REQUIRE(server.listen("127.0.0.1", limits));
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  {
    tcp::socket agent(io);
    agent.connect(at);
    // Its hello with its first beats in the same write, then more beats: still alive.
    asio::write(agent, asio::buffer(encode_hello(hello_of("beating", 1)) + ".."));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(read_bytes(io, agent, 3) == "...");  // the server's beats
    CHECK(std::chrono::steady_clock::now() - t0 >= 90ms);
    asio::write(agent, asio::buffer(std::string("...")));
    io.restart();
    io.run_for(120ms);
    CHECK(gone.empty());
  }  // then it dies
  REQUIRE(run_until(io, [&] { return !gone.empty(); }));
  CHECK(gone == std::vector<std::pair<std::string, PeerEnd>>{{"beating", PeerEnd::kClosed}});
  {
    tcp::socket polite(io);
    polite.connect(at);
    asio::write(polite, asio::buffer(encode_hello(hello_of("polite", 2)) + "..."));
    read_bytes(io, polite, 1);
    asio::write(polite, asio::buffer(std::string("..") + std::string(kBye)));
  }                       // beats, then its bye: orderly
  tcp::socket probe(io);  // a later death, to know the polite close has been read
  probe.connect(at);
  asio::write(probe, asio::buffer(encode_hello(hello_of("probe", 3))));
  read_bytes(io, probe, 1);
  probe.close();
  REQUIRE(run_until(io, [&] { return gone.size() == 2; }));
  CHECK(gone.back().first == "probe");
  server.stop();
  CHECK(gone.size() == 2);
}

TEST_CASE("a link beats to its coordinator and takes the coordinator's beats for life",
          "[presence]") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const etcd::Endpoint at{"127.0.0.1", acceptor.local_endpoint().port()};
  std::vector<PeerEnd> gone;
  std::optional<Status> unreachable;
  const auto hello = encode_hello(hello_of("me", 9));
  auto link = PresenceLink::open(
      io.get_executor(), at, hello, {.connect_deadline = 2000ms, .silence_timeout = 200ms},
      [&](PeerEnd end) { gone.push_back(end); }, [&](Status s) { unreachable = s; });
  tcp::socket coordinator(io);
  CHECK(accept_hello(io, acceptor, coordinator) == hello);
  CHECK(read_bytes(io, coordinator, 2) == "..");  // the link's beats
  asio::write(coordinator, asio::buffer(std::string("....")));
  read_bytes(io, coordinator, 2);  // it read them and beats on
  CHECK(gone.empty());
  coordinator.close();  // the coordinator's process died
  REQUIRE(run_until(io, [&] { return !gone.empty(); }));
  CHECK(gone == std::vector<PeerEnd>{PeerEnd::kClosed});
  CHECK_FALSE(unreachable);
}

}  // namespace
}  // namespace ddp::agent
