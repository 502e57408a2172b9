// The presence signal's parts (presence_wire.h, presence_server.h, presence_link.h): the
// wire and the token's verdicts, and real sockets on loopback: a close without bye is
// reported, a bye is not, a refused hello never is, an unreachable coordinator is named.
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <vector>

#include "agent/presence_link.h"
#include "agent/presence_server.h"
#include "agent/presence_wire.h"
#include "tests/agent/presence_fixture.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using namespace presence_fixture;

TEST_CASE("a coordinator claim carries its presence endpoint", "[presence]") {
  CoordinatorClaim claim{"10.0.0.1:42", etcd::Endpoint{"10.0.0.1", 5000}};
  auto back = decode_claim(encode_claim(claim));
  CHECK(back.node_key == "10.0.0.1:42");
  REQUIRE(back.presence);
  CHECK(*back.presence == etcd::Endpoint{"10.0.0.1", 5000});
  auto v6 = decode_claim(encode_claim({"k", etcd::Endpoint{"::1", 7}}));
  REQUIRE(v6.presence);
  CHECK(v6.presence->host == "::1");
  CHECK(encode_claim({"plain", std::nullopt}) == "plain");
  CHECK_FALSE(decode_claim("plain").presence);          // a claim without a listener
  CHECK_FALSE(decode_claim("k\nnot:a:port").presence);  // junk: the lease alone
}

TEST_CASE("a presence hello round-trips and bad ones are named", "[presence]") {
  PresenceHello hello{"job1", "10.0.0.2:77", 7587868392839, kToken + kOther};
  auto back = decode_hello(encode_hello(hello));
  REQUIRE(back);
  CHECK(back->run_id == "job1");
  CHECK(back->node_key == "10.0.0.2:77");
  CHECK(back->lease == 7587868392839);
  CHECK(back->token == kToken + kOther);
  const std::string t = "\n" + kToken + "\n\n";
  CHECK(decode_hello("ddprun-presence\nj\nn\n12\n" + kToken).status().code() ==
        ErrorCode::kProtocol);
  CHECK(decode_hello("other\nj\nn\n12" + t).status().message().find("not a ddprun") !=
        std::string::npos);
  CHECK(decode_hello("ddprun-presence\nj\nn\nx1" + t).status().message().find("lease") !=
        std::string::npos);
  CHECK_FALSE(decode_hello("ddprun-presence\nj\nn\n0" + t));
  // The token is required, hex, and at least 128 bits.
  CHECK(decode_hello("ddprun-presence\nj\nn\n12\n\n").status().code() == ErrorCode::kProtocol);
  auto short_token = decode_hello("ddprun-presence\nj\nn\n12\n0123abcd\n\n");
  CHECK(short_token.status().message().find("bad token") != std::string::npos);
  CHECK(short_token.status().message().find("node n") != std::string::npos);
  CHECK_FALSE(decode_hello("ddprun-presence\nj\nn\n12\n" + kToken.substr(1) + "X\n\n"));
}

TEST_CASE("a hello's token decides: refused when etcd holds another, revoked only on a match",
          "[presence]") {
  CHECK(same_token(kToken, kToken));
  CHECK_FALSE(same_token(kToken, kOther));
  CHECK_FALSE(same_token(kToken, kToken.substr(1)));
  CHECK_FALSE(same_token(kToken, ""));
  const auto hello = hello_of("node-b", 42);
  const auto forged = hello_of("node-b", 42, kOther);  // the real key and lease, a wrong token

  const PresenceRecord joined{42, kToken};
  CHECK_FALSE(token_mismatch(hello, joined));
  CHECK(revokes_on_close(hello, joined));
  CHECK(token_mismatch(forged, joined));  // refused at once
  CHECK_FALSE(revokes_on_close(forged, joined));
  // Not joined yet (the hello comes before the JOIN txn): no verdict, and no revoke.
  const PresenceRecord not_joined{0, std::nullopt};
  CHECK_FALSE(token_mismatch(hello, not_joined));
  CHECK_FALSE(revokes_on_close(hello, not_joined));
  CHECK_FALSE(revokes_on_close(forged, not_joined));
  // Left (keys gone), joined again under another lease, or a token without its node key.
  CHECK_FALSE(revokes_on_close(hello, PresenceRecord{43, kToken}));
  CHECK_FALSE(revokes_on_close(hello, PresenceRecord{0, kToken}));
  CHECK_FALSE(revokes_on_close(hello_of("node-b", 43), joined));
}

TEST_CASE("the server reports a connection closed without bye, not one that said bye",
          "[presence]") {
  asio::io_context io;
  std::vector<std::string> gone;
  PresenceServer server(io, accept_all,
                        [&](const PresenceHello& h, PeerEnd) { gone.push_back(h.node_key); });
  REQUIRE(server.listen("127.0.0.1", {}));
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  {
    tcp::socket polite(io);
    polite.connect(at);
    asio::write(polite, asio::buffer(encode_hello(hello_of("polite", 1)) + std::string(kBye)));
  }  // closed after its bye
  {
    tcp::socket killed(io);
    killed.connect(at);
    asio::write(killed, asio::buffer(encode_hello(hello_of("killed", 2))));
  }  // closed as a dying process's kernel closes it
  REQUIRE(run_until(io, [&] { return !gone.empty(); }));
  CHECK(gone == std::vector<std::string>{"killed"});
  {
    tcp::socket stranger(io);  // no hello: nothing to report
    stranger.connect(at);
    asio::write(stranger, asio::buffer(std::string("GET / HTTP/1.0\r\n\r\n")));
  }
  // A hello it does not accept is closed with a bye: the agent must not take it for a death.
  tcp::socket refused(io);
  refused.connect(at);
  asio::write(refused,
              asio::buffer(std::string("ddprun-presence\nj\nn\nnot-a-lease\n") + kToken + "\n\n"));
  CHECK(read_to_close(io, refused) == std::string(kBye));
  server.stop();
  CHECK(gone.size() == 1);
}

TEST_CASE("a hello its check refuses gets a bye and is never reported gone", "[presence]") {
  asio::io_context io;
  std::vector<std::string> gone;
  std::vector<std::string> checked;
  // The coordinator's check: etcd holds kToken for every node.
  auto check = [&](const PresenceHello& h) -> asio::awaitable<Status> {
    checked.push_back(h.node_key);
    if (token_mismatch(h, PresenceRecord{h.lease, kToken})) {
      co_return unauthenticated("token mismatch");
    }
    co_return Status::ok();
  };
  PresenceServer server(io, check,
                        [&](const PresenceHello& h, PeerEnd) { gone.push_back(h.node_key); });
  REQUIRE(server.listen("127.0.0.1", {}));
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  {
    tcp::socket forger(io);
    forger.connect(at);
    asio::write(forger, asio::buffer(encode_hello(hello_of("victim", 5, kOther))));
    // Refused: the server closed it on purpose.
    CHECK(read_to_close(io, forger) == std::string(kBye));
  }  // and the forger's end closes without a bye
  {
    tcp::socket real(io);
    real.connect(at);
    asio::write(real, asio::buffer(encode_hello(hello_of("real", 6))));
    REQUIRE(run_until(io, [&] { return checked.size() == 2; }));
  }  // the real agent's process dies
  REQUIRE(run_until(io, [&] { return !gone.empty(); }));
  CHECK(checked == std::vector<std::string>{"victim", "real"});
  CHECK(gone == std::vector<std::string>{"real"});
  server.stop();
}

TEST_CASE("a connection without a hello by its deadline, or over the cap, gets a bye",
          "[presence]") {
  asio::io_context io;
  std::vector<std::string> gone;
  PresenceServer server(io, accept_all,
                        [&](const PresenceHello& h, PeerEnd) { gone.push_back(h.node_key); });
  PresenceServer::Limits limits;
  limits.max_connections = 2;
  limits.hello_deadline = std::chrono::milliseconds(300);
  REQUIRE(server.listen("127.0.0.1", limits));
  const tcp::endpoint at(asio::ip::make_address("127.0.0.1"), server.port());
  tcp::socket agent(io);  // a real agent's hello, in time
  agent.connect(at);
  asio::write(agent, asio::buffer(encode_hello(hello_of("agent", 1))));
  tcp::socket silent(io);  // connects and says nothing
  silent.connect(at);
  tcp::socket third(io);  // over the cap of 2: a bye at once
  third.connect(at);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(read_to_close(io, third) == std::string(kBye));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300));
  CHECK(read_to_close(io, silent) == std::string(kBye));  // at its deadline
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(250));
  // The agent that said its hello is kept past the deadline, and none was reported gone.
  tcp::socket fourth(io);  // a slot is free again: kept until its own deadline
  fourth.connect(at);
  asio::write(fourth, asio::buffer(encode_hello(hello_of("fourth", 2))));
  agent.close();  // dies
  REQUIRE(run_until(io, [&] { return !gone.empty(); }));
  CHECK(gone == std::vector<std::string>{"agent"});
  server.stop();
}

TEST_CASE("a link reports its coordinator gone, and says bye when closed", "[presence]") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const etcd::Endpoint at{"127.0.0.1", acceptor.local_endpoint().port()};
  int gone = 0;
  std::optional<Status> unreachable;
  auto hello = encode_hello(hello_of("me", 9));

  auto link = PresenceLink::open(
      io.get_executor(), at, hello, {}, [&](PeerEnd) { ++gone; },
      [&](Status s) { unreachable = s; });
  tcp::socket coordinator(io);
  std::string got = accept_hello(io, acceptor, coordinator);
  CHECK(got == hello);
  coordinator.close();  // the coordinator's process died
  REQUIRE(run_until(io, [&] { return gone == 1; }));
  CHECK_FALSE(unreachable);

  auto second = PresenceLink::open(
      io.get_executor(), at, hello, {}, [&](PeerEnd) { ++gone; },
      [&](Status s) { unreachable = s; });
  tcp::socket coordinator2(io);
  std::string got2 = accept_hello(io, acceptor, coordinator2);
  second->close();  // following another coordinator: bye, then close
  boost::system::error_code ec;
  std::string rest(16, '\0');
  auto n = asio::read(coordinator2, asio::buffer(rest), ec);
  CHECK(got2.substr(hello.size()) + rest.substr(0, n) == std::string(kBye));
  CHECK(ec == asio::error::eof);
  io.restart();
  io.poll();
  CHECK(gone == 1);  // no callback after close()

  auto third = PresenceLink::open(
      io.get_executor(), at, hello, {}, [&](PeerEnd) { ++gone; },
      [&](Status s) { unreachable = s; });
  tcp::socket coordinator3(io);
  accept_hello(io, acceptor, coordinator3);
  asio::write(coordinator3, asio::buffer(kBye));  // the coordinator exits on purpose
  coordinator3.close();
  bool ended = false;
  auto probe = PresenceLink::open(  // a later link, to know the first's read has run
      io.get_executor(), at, hello, {}, [](PeerEnd) {}, [&](Status) { ended = true; });
  acceptor.close();
  REQUIRE(run_until(io, [&] { return ended; }));
  CHECK(gone == 1);  // a bye is not a death
  CHECK_FALSE(unreachable);
}

TEST_CASE("a coordinator that cannot be reached is named once", "[presence]") {
  asio::io_context io;
  std::uint16_t closed_port = 0;
  {
    tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    closed_port = probe.local_endpoint().port();
  }  // nothing listens there now
  std::optional<Status> unreachable;
  bool gone = false;
  auto link = PresenceLink::open(
      io.get_executor(), etcd::Endpoint{"127.0.0.1", closed_port}, encode_hello(hello_of("me", 9)),
      {}, [&](PeerEnd) { gone = true; }, [&](Status s) { unreachable = s; });
  REQUIRE(run_until(io, [&] { return unreachable.has_value(); }));
  CHECK(unreachable->message().find("cannot connect") != std::string::npos);
  CHECK(unreachable->message().find("127.0.0.1:" + std::to_string(closed_port)) !=
        std::string::npos);
  CHECK_FALSE(gone);
}

}  // namespace
}  // namespace ddp::agent
