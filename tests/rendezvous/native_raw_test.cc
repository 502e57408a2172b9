// Byte-exact checks of a native-mode connection's reply stream against an embedded server:
// raw bytes in (hand-written TCPStore queries, membership/wire.h native requests), exact
// bytes out. One io_context, one thread, loopback.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "rendezvous/framer.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/server.h"
#include "tests/catch.h"
#include "tests/rendezvous/wire_bytes.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::tcp;
using test::byte;
using test::str;
using test::u64;
namespace m = membership;

struct Raw {
  boost::asio::io_context io;
  std::unique_ptr<Server> server;
  tcp::socket socket{io};

  Raw() {
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto started = Server::start(io, options);
    REQUIRE(started);
    server = std::move(*started);
    // The listener is already in the kernel: a blocking connect completes from the backlog.
    socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), server->port()));
  }

  void send(const std::string& bytes) { boost::asio::write(socket, boost::asio::buffer(bytes)); }

  // Exactly n bytes, serving the server meanwhile; the error when the read ends early.
  std::pair<std::string, boost::system::error_code> read(std::size_t n) {
    std::string buffer(n, '\0');
    std::optional<boost::system::error_code> done;
    std::size_t got = 0;
    boost::asio::async_read(socket, boost::asio::buffer(buffer),
                            [&](boost::system::error_code ec, std::size_t k) {
                              done = ec;
                              got = k;
                            });
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done && std::chrono::steady_clock::now() < deadline) io.run_one_for(20ms);
    REQUIRE(done);
    buffer.resize(got);
    return {buffer, *done};
  }
};

m::JoinRequest pending_join() {
  m::JoinRequest join;
  join.run_id = "raw";
  join.config.min_nodes = join.config.max_nodes = 2;  // stays pending: only JOINED comes back
  join.node = {"raw-node", "127.0.0.1", 1, 1};
  return join;
}

TEST_CASE("after a native request every store reply is framed, in query order", "[native]") {
  Raw raw;
  // JOIN, then (no VALIDATE: modern numbering implied) WAIT k, SET k v, GET k, pipelined.
  raw.send(m::encode_request(pending_join()) + byte(6) + u64(1) + str("k") + byte(1) + str("k") +
           str("v") + byte(3) + str("k"));
  const std::string expected = m::encode_push(m::Joined{1, false}) + byte(kStoreReplyType) +
                               u64(1) + byte(0) +                          // WAIT: STOP_WAITING
                               byte(kStoreReplyType) + u64(0) +            // SET: empty
                               byte(kStoreReplyType) + u64(9) + str("v");  // GET: u64 len + v
  auto [bytes, ec] = raw.read(expected.size());
  CHECK_FALSE(ec);
  CHECK(bytes == expected);
}

TEST_CASE("store replies before the first native request stay raw", "[native]") {
  Raw raw;
  raw.send(byte(0) + str("a") + str("1") + byte(2) + str("a") +  // 1.13 SET, GET
           m::encode_request(pending_join()) + byte(2) + str("a"));
  const std::string expected =
      str("1") + m::encode_push(m::Joined{1, false}) + byte(kStoreReplyType) + u64(9) + str("1");
  auto [bytes, ec] = raw.read(expected.size());
  CHECK_FALSE(ec);
  CHECK(bytes == expected);
}

TEST_CASE("WATCH_KEY and native requests never share a connection", "[native]") {
  SECTION("native after a watch") {
    Raw raw;
    raw.send(byte(7) + str("w") + m::encode_request(pending_join()));  // 1.13 WATCH_KEY
    // Both arrive in one read burst: the close comes before the watch reply is written.
    auto [bytes, ec] = raw.read(2);
    CHECK(bytes.empty());
    CHECK(ec == boost::asio::error::eof);
  }
  SECTION("a watch after native") {
    Raw raw;
    raw.send(byte(0) + str("a") + str("1") + m::encode_request(pending_join()) + byte(7) +
             str("a"));
    const std::string joined = m::encode_push(m::Joined{1, false});
    auto [bytes, ec] = raw.read(joined.size() + 1);
    CHECK(bytes == joined);
    CHECK(ec == boost::asio::error::eof);
  }
}

TEST_CASE("an old agent's AUTH_OPEN (0x8A) gets an ERROR push, then the connection closes",
          "[native][auth]") {
  Raw raw;
  // What a ddprun from before issue 31 wrote first: AUTH_OPEN (run id, nonce, wall clock) and,
  // in the same write, its JOIN as an AUTH_FRAME.
  const std::string join = m::encode_request(pending_join());
  raw.send(byte(0x8A) + str("raw") + std::string(32, '\x07') + u64(1764000000000) + byte(0x89) +
           u64(0) + std::string(32, '\0') + byte(0) + str(join));
  auto [head, head_ec] = raw.read(10);  // type, code, u64 message length
  REQUIRE_FALSE(head_ec);
  CHECK(static_cast<std::uint8_t>(head[0]) == 0x94);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(head[2 + i]);
  REQUIRE(n < 1000);
  auto [message, message_ec] = raw.read(n);
  REQUIRE_FALSE(message_ec);
  auto push = m::decode_push(head + message);
  REQUIRE(push.state == m::DecodeState::kComplete);
  const auto* error = std::get_if<m::ErrorEvent>(&push.message);
  REQUIRE(error != nullptr);
  CHECK(error->code == ErrorCode::kUnauthenticated);
  CHECK_THAT(error->message,
             Catch::Contains("one challenge per connection") && Catch::Contains("upgrade"));
  auto [rest, ec] = raw.read(1);
  CHECK(rest.empty());
  CHECK(ec == boost::asio::error::eof);
  // The daemon goes on: a new connection joins.
  tcp::socket other(raw.io);
  other.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), raw.server->port()));
  boost::asio::write(other, boost::asio::buffer(join));
  raw.socket = std::move(other);
  const std::string joined = m::encode_push(m::Joined{1, false});
  auto [bytes, joined_ec] = raw.read(joined.size());
  CHECK_FALSE(joined_ec);
  CHECK(bytes == joined);
}

}  // namespace
}  // namespace ddp::rendezvous
