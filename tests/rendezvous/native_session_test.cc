// The store Server embedded on one io_context (as an agent embeds it) serving native
// rendezvous requests and TCPStore queries on the same connections, driven by RdzvClient on
// that same io_context: one thread, real loopback sockets, no other process.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/membership/messages.h"
#include "rendezvous/rdzv_client.h"
#include "rendezvous/server.h"
#include "tests/catch.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
namespace m = membership;

using test::run_until;

ServerOptions loopback() {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  return options;
}

struct Agent {
  std::shared_ptr<RdzvClient> client;
  std::optional<Result<m::Joined>> joined;
  std::vector<m::Payload> events;
  std::optional<Status> disconnected;

  template <typename T>
  const T* last() const {
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (const T* p = std::get_if<T>(&*it)) return p;
    }
    return nullptr;
  }
};

std::unique_ptr<Agent> connect_agent(boost::asio::io_context& io, std::uint16_t port) {
  auto agent = std::make_unique<Agent>();
  Agent* a = agent.get();
  a->client = RdzvClient::create(io, {[a](const m::Payload& p) { a->events.push_back(p); },
                                      [a](const Status& s) { a->disconnected = s; }});
  std::optional<Status> connected;
  a->client->connect("127.0.0.1", port, 2s, [&](Status s) { connected = s; });
  REQUIRE(run_until(io, [&] { return connected.has_value(); }));
  REQUIRE(connected->is_ok());
  return agent;
}

m::JoinRequest join_request(std::string key, std::uint32_t local_world_size) {
  m::JoinRequest r;
  r.run_id = "embedded";
  r.config.min_nodes = 2;
  r.config.max_nodes = 2;
  r.node = {key, "127.0.0.1", static_cast<std::uint16_t>(40000 + local_world_size),
            local_world_size};
  return r;
}

TEST_CASE("an embedded server runs a rendezvous and serves store queries on the same connection",
          "[native]") {
  boost::asio::io_context io;
  auto server = Server::start(io, loopback());
  REQUIRE(server);
  auto a = connect_agent(io, (*server)->port());
  auto b = connect_agent(io, (*server)->port());

  // JOIN goes out first, so the daemon frames every store reply of this connection.
  a->client->join(join_request("a", 3), [&](Result<m::Joined> r) { a->joined = r; });
  std::optional<Result<std::string>> set_reply;
  std::optional<Result<std::string>> get_reply;
  a->client->store(Request{.op = Op::kSet, .key = "barrier/x", .value = "1"},
                   [&](Result<std::string> r) { set_reply = r; });
  a->client->store(Request{.op = Op::kGet, .key = "barrier/x"},
                   [&](Result<std::string> r) { get_reply = r; });
  b->client->join(join_request("b", 1), [&](Result<m::Joined> r) { b->joined = r; });

  REQUIRE(run_until(
      io, [&] { return a->last<m::RoundComplete>() && b->last<m::RoundComplete>() && get_reply; }));
  REQUIRE(a->joined->is_ok());
  CHECK_FALSE(a->joined->value().waiting);
  const auto& ra = *a->last<m::RoundComplete>();
  const auto& rb = *b->last<m::RoundComplete>();
  CHECK(ra.group_rank == 0);
  CHECK(rb.group_rank == 1);
  CHECK(ra.world_size == 4);
  CHECK(rb.rank_offset == 3);
  CHECK(rb.store_port == 40003);  // group rank 0's worker-store port
  REQUIRE(set_reply->is_ok());
  CHECK(set_reply->value().empty());
  REQUIRE(get_reply->is_ok());
  CHECK(get_reply->value() == std::string("\x01\0\0\0\0\0\0\0", 8) + "1");

  SECTION("a closed connection stops the other node at once") {
    a->client->close();
    REQUIRE(run_until(
        io, [&] { return b->last<m::StopWorkers>() != nullptr; }, 1s));
    CHECK(b->last<m::StopWorkers>()->reason == m::StopReason::kNodeLost);
  }
  SECTION("a parked WAIT is answered when another connection writes the key") {
    std::optional<Result<std::string>> waited;
    b->client->store(Request{.op = Op::kWait, .keys = {"late"}},
                     [&](Result<std::string> r) { waited = r; });
    io.poll();
    CHECK_FALSE(waited);
    a->client->store(Request{.op = Op::kSet, .key = "late", .value = "v"}, [](auto) {});
    REQUIRE(run_until(io, [&] { return waited.has_value(); }));
    CHECK(waited->value() == std::string(1, '\0'));  // STOP_WAITING
  }
  SECTION("reset_store closes the store clients, keeps the nodes and empties the store") {
    // A worker's TCPStore client (1.13 numbering): one SET, which has no reply.
    boost::asio::ip::tcp::socket worker(io);
    worker.connect({boost::asio::ip::make_address("127.0.0.1"), (*server)->port()});
    boost::asio::write(
        worker, boost::asio::buffer(*encode_request(Dialect::kLegacy113,
                                                    {.op = Op::kSet, .key = "old", .value = "v"})));
    REQUIRE(run_until(io, [&] { return (*server)->stats().keys == 2; }));
    (*server)->reset_store();
    CHECK((*server)->stats().keys == 0);
    char byte = 0;
    std::optional<boost::system::error_code> closed;
    worker.async_read_some(boost::asio::buffer(&byte, 1),
                           [&](boost::system::error_code ec, std::size_t) { closed = ec; });
    REQUIRE(run_until(io, [&] { return closed.has_value(); }));
    CHECK(*closed == boost::asio::error::eof);
    std::optional<Result<std::string>> got;
    a->client->store(Request{.op = Op::kGet, .key = "old"},
                     [&](Result<std::string> r) { got = r; });
    REQUIRE(run_until(io, [&] { return got.has_value(); }));
    REQUIRE(got->is_ok());  // the node's connection still serves it: the key is gone
    CHECK(got->value() == std::string(8, '\0'));
    CHECK_FALSE(a->disconnected);
    CHECK_FALSE(b->disconnected);
  }
  SECTION("server stop ends the clients with a disconnect, and the io_context runs dry") {
    const std::size_t a_before = a->events.size(), b_before = b->events.size();
    (*server)->stop();
    REQUIRE(run_until(io, [&] { return a->disconnected && b->disconnected; }));
    CHECK(a->disconnected->code() == ErrorCode::kPeerGone);
    // Each closure is not a departure: no node is told to stop, or that the job ended (on
    // etcd the job goes on under another host).
    CHECK(a->events.size() == a_before);
    CHECK(b->events.size() == b_before);
    a->client->close();
    b->client->close();
    server->reset();
    io.run_for(2s);
    CHECK(io.stopped());  // no timer or socket left behind
  }
}

TEST_CASE("a join error from the daemon completes join with its message", "[native]") {
  boost::asio::io_context io;
  auto server = Server::start(io, loopback());
  REQUIRE(server);
  auto a = connect_agent(io, (*server)->port());
  auto bad = join_request("a", 1);
  bad.config.min_nodes = 3;  // above max_nodes 2
  a->client->join(bad, [&](Result<m::Joined> r) { a->joined = r; });
  REQUIRE(run_until(io, [&] { return a->joined.has_value(); }));
  REQUIRE_FALSE(a->joined->is_ok());
  CHECK(a->joined->status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(a->joined->status().message(), Catch::Contains("--nnodes"));
}

TEST_CASE("connecting to a closed port fails with a message naming the endpoint", "[native]") {
  boost::asio::io_context io;
  std::uint16_t port = 0;
  {
    auto server = Server::start(io, loopback());
    REQUIRE(server);
    port = (*server)->port();
  }
  auto client = RdzvClient::create(io, {});
  std::optional<Status> connected;
  client->connect("127.0.0.1", port, 2s, [&](Status s) { connected = s; });
  REQUIRE(run_until(io, [&] { return connected.has_value(); }));
  CHECK_FALSE(connected->is_ok());
  CHECK_THAT(connected->message(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
}

}  // namespace
}  // namespace ddp::rendezvous
