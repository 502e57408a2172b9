// The coordinator's batched presence reads (agent/presence_records.h) against a real etcd
// (tests/etcd/etcd_cluster.h): concurrent reads share txns (counted by etcd's own metrics),
// each gets its own node's record, a lone read costs one txn, stop() ends waiting reads.
#include "agent/presence_records.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <regex>
#include <vector>

#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_util.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::await;
using testing::run_until;

// How many Txn calls etcd has served so far (its Prometheus metrics on the client port).
long txns_served(const etcd::Endpoint& at) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  asio::ip::tcp::resolver resolver(io);
  asio::connect(socket, resolver.resolve(at.host, std::to_string(at.port)));
  asio::write(socket, asio::buffer(std::string("GET /metrics HTTP/1.0\r\n\r\n")));
  std::string text;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(text), ec);  // to EOF
  static const std::regex line(
      R"(grpc_server_handled_total\{grpc_code="OK",grpc_method="Txn",[^}]*\} (\d+))");
  std::smatch m;
  return std::regex_search(text, m, line) ? std::stol(m[1]) : 0;
}

// "n<i>" (appended, not operator+: GCC 12 warns falsely on "n" + std::to_string(i)).
std::string node_name(int i) {
  std::string name = "n";
  name += std::to_string(i);
  return name;
}

TEST_CASE("concurrent presence reads share txns, each gets its own record", "[presence]") {
  testing::EtcdCluster cluster;
  etcd::ClientOptions options;
  options.endpoints = cluster.endpoints();
  options.request_timeout = 15s;
  asio::io_context io;
  etcd::Client client(io.get_executor(), options);
  const EtcdKeys keys("/t", "job");
  auto lease = await(io, client.grant(60s));
  REQUIRE(lease);
  constexpr int kNodes = 150;
  for (int i = 0; i < kNodes; i += 2) {  // the odd nodes have neither key
    const std::string key = node_name(i);
    REQUIRE(await(io, client.put(keys.node(key), "join", lease->id)));
    REQUIRE(await(io, client.put(keys.presence(key), "token" + std::to_string(i), lease->id)));
  }
  PresenceRecords records(io, client, keys);
  REQUIRE(await(io, records.read("n0")));  // warm: the client's connection is open
  const long before = txns_served(cluster.endpoints()[0]);

  std::vector<std::optional<Result<PresenceRecord>>> got(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    asio::co_spawn(
        io, [&, i]() -> asio::awaitable<void> { got[i] = co_await records.read(node_name(i)); },
        asio::detached);
  }
  REQUIRE(run_until(
      io,
      [&] {
        for (const auto& g : got)
          if (!g) return false;
        return true;
      },
      20s));
  const long batched = txns_served(cluster.endpoints()[0]) - before;
  for (int i = 0; i < kNodes; ++i) {
    INFO("node " << i);
    REQUIRE(*got[i]);
    const PresenceRecord& r = got[i]->value();
    if (i % 2 == 0) {
      CHECK(r.node_lease == lease->id);
      CHECK(r.token == "token" + std::to_string(i));
    } else {
      CHECK(r.node_lease == 0);
      CHECK_FALSE(r.token);
    }
  }
  // One lone txn, then the rest in batches of at most 64 nodes: 1 + ceil(149 / 64) = 4.
  CHECK(batched >= 3);
  CHECK(batched <= 4);

  const long lone_before = txns_served(cluster.endpoints()[0]);
  auto lone = await(io, records.read("n2"));
  REQUIRE(lone);
  CHECK(lone->token == "token2");
  CHECK(txns_served(cluster.endpoints()[0]) - lone_before == 1);

  // stop(): a read waiting for its txn ends with kCancelled, and later reads too.
  std::optional<Result<PresenceRecord>> waiting;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { waiting = co_await records.read("n4"); },
      asio::detached);
  io.poll();  // it has asked; its txn is in flight
  records.stop();
  REQUIRE(run_until(
      io, [&] { return waiting.has_value(); }, 10s));
  CHECK(waiting->status().code() == ErrorCode::kCancelled);
  auto after = await(io, records.read("n6"));
  CHECK(after.status().code() == ErrorCode::kCancelled);
}

}  // namespace
}  // namespace ddp::agent
