// RdzvClient's "daemon silent" deadline: a daemon that sends nothing for
// keep_alive_interval * keep_alive_max_attempt while a reply is owed is reported lost through
// on_disconnect; a live daemon holding a parked WAIT is not. One thread, loopback sockets.
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/rdzv_client.h"
#include "rendezvous/server.h"
#include "tests/catch.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
namespace m = membership;
namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

bool run_until(asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    io.run_one_for(10ms);
  }
  return true;
}

m::JoinRequest fast_join() {
  m::JoinRequest r;
  r.run_id = "liveness";
  r.config.min_nodes = 2;  // never completes: the client stays joined and waiting
  r.config.max_nodes = 2;
  r.config.keep_alive_interval = 50ms;
  r.config.keep_alive_max_attempt = 3;  // budget 150 ms
  r.node = {"a", "127.0.0.1", 40001, 1};
  return r;
}

struct Probe {
  std::shared_ptr<RdzvClient> client;
  std::optional<Status> disconnected;
  Clock::time_point disconnected_at;
};

std::unique_ptr<Probe> connect_probe(asio::io_context& io, std::uint16_t port) {
  auto probe = std::make_unique<Probe>();
  Probe* p = probe.get();
  p->client = RdzvClient::create(io, {[](const m::Payload&) {},
                                      [p](const Status& s) {
                                        p->disconnected = s;
                                        p->disconnected_at = Clock::now();
                                      }});
  std::optional<Status> connected;
  p->client->connect("127.0.0.1", port, 2s, [&](Status s) { connected = s; });
  REQUIRE(run_until(
      io, [&] { return connected.has_value(); }, 2s));
  REQUIRE(connected->is_ok());
  return probe;
}

// A "daemon" that accepts and reads but never writes (with `answer_hello`: only VERSION, the
// answer to the agent's HELLO): a partitioned or hung peer whose TCP connection stays open.
// join() on it must end with kPeerGone within the heartbeat budget.
void check_silent_daemon_is_lost(bool answer_hello) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket peer(io);
  acceptor.async_accept(peer, [](boost::system::error_code) {});
  std::array<char, 4096> sink{};
  std::function<void()> drain = [&] {
    peer.async_read_some(asio::buffer(sink), [&](boost::system::error_code ec, std::size_t) {
      if (!ec) drain();
    });
  };
  std::string hello(5, '\0');
  const std::string version = m::encode_version(m::this_version());
  auto answer = [&] {
    // HELLO: u8 type, u32 n, n bytes; then VERSION, then silence.
    asio::async_read(peer, asio::buffer(hello), [&](boost::system::error_code ec, std::size_t) {
      if (ec) return;
      std::uint32_t n = 0;
      std::memcpy(&n, hello.data() + 1, sizeof n);
      hello.resize(5 + n);
      asio::async_read(peer, asio::buffer(hello.data() + 5, n),
                       [&](boost::system::error_code e, std::size_t) {
                         if (e) return;
                         asio::async_write(peer, asio::buffer(version),
                                           [](boost::system::error_code, std::size_t) {});
                         drain();
                       });
    });
  };
  auto probe = connect_probe(io, acceptor.local_endpoint().port());
  REQUIRE(run_until(
      io, [&] { return peer.is_open(); }, 2s));
  if (answer_hello) {
    answer();
  } else {
    drain();
  }

  const auto joined_at = Clock::now();
  probe->client->join(fast_join(), [](Result<m::Joined>) {});
  REQUIRE(run_until(
      io, [&] { return probe->disconnected.has_value(); }, 3s));
  const auto after = probe->disconnected_at - joined_at;
  CHECK(probe->disconnected->code() == ErrorCode::kPeerGone);
  CHECK_THAT(probe->disconnected->message(), Catch::Contains("sent nothing for") &&
                                                 Catch::Contains("127.0.0.1:") &&
                                                 Catch::Contains("keep_alive_max_attempt"));
  // Budget 150 ms after the first unanswered PING (one tick in): 200 ms, at most a tick more.
  CHECK(after >= 150ms);
  CHECK(after < 1500ms);
  CHECK_FALSE(probe->client->is_open());
  if (answer_hello) CHECK(hello == m::encode_hello(m::this_version()));
}

TEST_CASE("a daemon that sends nothing for the heartbeat budget is reported lost",
          "[native][liveness]") {
  check_silent_daemon_is_lost(false);  // not even VERSION
}

TEST_CASE("a daemon silent after VERSION is reported lost too", "[native][liveness]") {
  check_silent_daemon_is_lost(true);
}

TEST_CASE("a live daemon holding a parked WAIT is not reported lost", "[native][liveness]") {
  asio::io_context io;
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = Server::start(io, options);
  REQUIRE(server);
  auto probe = connect_probe(io, (*server)->port());
  std::optional<Result<m::Joined>> joined;
  probe->client->join(fast_join(), [&](Result<m::Joined> r) { joined = r; });
  std::optional<Result<std::string>> waited;
  probe->client->store(Request{.op = Op::kWait, .keys = {"never"}},
                       [&](Result<std::string> r) { waited = r; });
  // Four budgets with the WAIT parked, then the same without it (PINGs answered): the
  // condition below must stay false for the whole period, so running to its limit is the point.
  CHECK_FALSE(run_until(
      io, [&] { return probe->disconnected.has_value(); }, 600ms));
  REQUIRE(joined.has_value());
  REQUIRE(joined->is_ok());
  CHECK_FALSE(waited.has_value());
  CHECK(probe->client->is_open());
  probe->client->close();
  (*server)->stop();
}

TEST_CASE("PINGs keep an idle joined connection alive", "[native][liveness]") {
  asio::io_context io;
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = Server::start(io, options);
  REQUIRE(server);
  auto probe = connect_probe(io, (*server)->port());
  probe->client->join(fast_join(), [](Result<m::Joined>) {});
  CHECK_FALSE(run_until(
      io, [&] { return probe->disconnected.has_value(); }, 600ms));
  // The probes never disturb the caller's own queries.
  std::optional<Result<std::string>> added;
  probe->client->store(Request{.op = Op::kAdd, .key = "k", .delta = 2},
                       [&](Result<std::string> r) { added = r; });
  REQUIRE(run_until(
      io, [&] { return added.has_value(); }, 2s));
  REQUIRE(added->is_ok());
  CHECK(added->value() == std::string("\x02\0\0\0\0\0\0\0", 8));
  probe->client->close();
  (*server)->stop();
}

}  // namespace
}  // namespace ddp::rendezvous
