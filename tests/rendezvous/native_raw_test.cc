// Byte-exact checks of a native-mode connection's reply stream against an embedded server:
// raw bytes in (hand-written TCPStore queries and HELLOs, membership/wire.h native requests),
// exact bytes out. Every native connection opens with HELLO, answered with VERSION. One
// io_context, one thread, loopback.
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

// The daemon's answer to a compatible HELLO.
std::string version() { return m::encode_version(m::this_version()); }

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
  // HELLO, JOIN, then (no VALIDATE: modern numbering implied) WAIT k, SET k v, GET k, pipelined.
  raw.send(test::hello() + m::encode_request(pending_join()) + byte(6) + u64(1) + str("k") +
           byte(1) + str("k") + str("v") + byte(3) + str("k"));
  const std::string expected = version() + m::encode_push(m::Joined{1, false}) +
                               byte(kStoreReplyType) + u64(1) + byte(0) +  // WAIT: STOP_WAITING
                               byte(kStoreReplyType) + u64(0) +            // SET: empty
                               byte(kStoreReplyType) + u64(9) + str("v");  // GET: u64 len + v
  auto [bytes, ec] = raw.read(expected.size());
  CHECK_FALSE(ec);
  CHECK(bytes == expected);
}

TEST_CASE("store replies before the first native request stay raw", "[native]") {
  Raw raw;
  raw.send(byte(0) + str("a") + str("1") + byte(2) + str("a") +  // 1.13 SET, GET
           test::hello() + m::encode_request(pending_join()) + byte(2) + str("a"));
  const std::string expected = str("1") + version() + m::encode_push(m::Joined{1, false}) +
                               byte(kStoreReplyType) + u64(9) + str("1");
  auto [bytes, ec] = raw.read(expected.size());
  CHECK_FALSE(ec);
  CHECK(bytes == expected);
}

TEST_CASE("WATCH_KEY and native requests never share a connection", "[native]") {
  SECTION("native after a watch") {
    Raw raw;
    raw.send(byte(7) + str("w") + test::hello() + m::encode_request(pending_join()));  // 1.13
    // All arrive in one read burst and the JOIN closes the connection: it is never joined.
    // (HELLO itself is answered, flushing the watch reply before VERSION.)
    const std::string answered = byte(kWatchRegistered) + version();
    auto [bytes, ec] = raw.read(answered.size() + 1);
    CHECK((bytes.empty() || bytes == answered));
    CHECK(ec == boost::asio::error::eof);
  }
  SECTION("a watch after native") {
    Raw raw;
    raw.send(byte(0) + str("a") + str("1") + test::hello() + m::encode_request(pending_join()) +
             byte(7) + str("a"));
    const std::string joined = version() + m::encode_push(m::Joined{1, false});
    auto [bytes, ec] = raw.read(joined.size() + 1);
    CHECK(bytes == joined);
    CHECK(ec == boost::asio::error::eof);
  }
}

// Reads protocol 1's ERROR (`0x94 | u8 code | str message`, no length) from `raw`.
m::ErrorEvent read_legacy_error(Raw& raw) {
  auto [head, head_ec] = raw.read(10);  // type, code, u64 message length
  REQUIRE_FALSE(head_ec);
  CHECK(static_cast<std::uint8_t>(head[0]) == m::kErrorType);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(head[2 + i]);
  REQUIRE(n < 1000);
  auto [message, message_ec] = raw.read(n);
  REQUIRE_FALSE(message_ec);
  auto error = m::decode_legacy_error(head + message);
  REQUIRE(error.state == m::DecodeState::kComplete);
  CHECK(error.consumed == head.size() + message.size());
  return error.value;
}

TEST_CASE("a native request before HELLO gets protocol 1's ERROR, then the connection closes",
          "[native]") {
  // What ddprun 0.1 (native protocol 1, no HELLO, no lengths) writes first: a JOIN or an
  // AUTH_HELLO; and a protocol-2 JOIN sent without its HELLO.
  const std::string v1_join =
      byte(0x80) + str("raw") + str("raw-node") + str("127.0.0.1") + std::string(64, '\0');
  for (const std::string& first :
       {v1_join, byte(0x88) + str("raw"), m::encode_request(pending_join())}) {
    Raw raw;
    raw.send(first + m::encode_request(m::Heartbeat{}));
    const m::ErrorEvent error = read_legacy_error(raw);
    CHECK(error.code == ErrorCode::kProtocol);
    CHECK_THAT(error.message, Catch::Contains("ddprun 0.1 (native protocol 1)") &&
                                  Catch::Contains("upgrade ddprun on this node"));
    auto [rest, ec] = raw.read(1);
    CHECK(rest.empty());
    CHECK(ec == boost::asio::error::eof);
    // The daemon goes on: a new connection with HELLO joins.
    tcp::socket other(raw.io);
    other.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), raw.server->port()));
    raw.socket = std::move(other);
    raw.send(test::hello() + m::encode_request(pending_join()));
    const std::string joined = version() + m::encode_push(m::Joined{1, false});
    auto [bytes, joined_ec] = raw.read(joined.size());
    CHECK_FALSE(joined_ec);
    CHECK(bytes == joined);
  }
}

TEST_CASE("a HELLO the daemon cannot work with gets VERSION, then the connection closes",
          "[native]") {
  Raw raw;
  // A future agent whose oldest protocol is above this daemon's.
  const std::uint32_t future = m::kProtocol + 2;
  raw.send(test::hello(future, future - 1, "9.0.0") + m::encode_request(pending_join()));
  auto [bytes, ec] = raw.read(version().size() + 1);
  CHECK(bytes == version());
  CHECK(ec == boost::asio::error::eof);
}

TEST_CASE("HELLO is answered with VERSION at once, a second HELLO closes the connection",
          "[native]") {
  Raw raw;
  raw.send(test::hello());
  auto [answer, answer_ec] = raw.read(version().size());
  REQUIRE_FALSE(answer_ec);
  auto v = m::decode_version(answer);
  REQUIRE(v.state == m::DecodeState::kComplete);
  CHECK(v.value == m::this_version());
  raw.send(test::hello());
  auto [rest, ec] = raw.read(1);
  CHECK(rest.empty());
  CHECK(ec == boost::asio::error::eof);
}

}  // namespace
}  // namespace ddp::rendezvous
