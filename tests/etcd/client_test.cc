// The etcd client against real etcd processes (tests/etcd/etcd_cluster.h): KV, CAS txns,
// leases, watches from a revision, failover between endpoints.
#include "etcd/client.h"

// Designated initializers leave the other fields at their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <csignal>
#include <filesystem>

#include "etcd/watch.h"
#include "tests/catch.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_util.h"

namespace ddp::etcd {
namespace {

using namespace std::chrono_literals;
using ddp::testing::await;
using ddp::testing::EtcdCluster;
using ddp::testing::put;
using ddp::testing::remove;
using ddp::testing::run_until;

ClientOptions options_for(const EtcdCluster& cluster) {
  return {.endpoints = cluster.endpoints(), .request_timeout = 15s, .attempt_timeout = 2s};
}

}  // namespace

TEST_CASE("put and range with binary keys and values and empty values", "[client]") {
  EtcdCluster cluster;
  boost::asio::io_context io;
  Client c(io.get_executor(), options_for(cluster));
  const std::string binary("k\0\xff/x", 5);
  auto r1 = put(io, c, "p/a", "1");
  REQUIRE(r1);
  REQUIRE(put(io, c, binary, ""));
  REQUIRE(put(io, c, "p/b", std::string("\0v", 2)));
  auto pb = await(io, c.range("p/b"));
  REQUIRE(pb);
  REQUIRE(pb->kvs.size() == 1);
  CHECK(pb->kvs[0].key == "p/b");
  CHECK(pb->kvs[0].value == std::string("\0v", 2));
  CHECK(pb->revision > *r1);
  auto b = await(io, c.range(binary));
  REQUIRE(b);
  REQUIRE(b->kvs.size() == 1);
  CHECK(b->kvs[0].value.empty());
  auto none = await(io, c.range("missing"));
  REQUIRE(none);
  CHECK(none->kvs.empty());
  CHECK(await(io, c.count_prefix("p/")).value() == 2);
  CHECK(await(io, c.count_prefix("q/")).value() == 0);  // the gateway leaves a zero out
  REQUIRE(remove(io, c, "p/a"));
  CHECK(await(io, c.range("p/a"))->kvs.empty());
  CHECK(await(io, c.count_prefix("p/")).value() == 1);
  REQUIRE(await(io, c.txn({.success = {op_delete("p/b")}})));
  CHECK(await(io, c.count_prefix("p/")).value() == 0);
}

TEST_CASE("txn compare-and-swap fails and succeeds on revisions", "[client]") {
  EtcdCluster cluster;
  boost::asio::io_context io;
  Client c(io.get_executor(), options_for(cluster));
  // Create-if-absent: the first wins, the second fails and reads the winner.
  auto create = [&](const std::string& who) {
    return await(io, c.txn({.compare = {compare_create_revision("leader", 0)},
                            .success = {op_put("leader", who)},
                            .failure = {op_range("leader")}}));
  };
  auto first = create("a");
  REQUIRE(first);
  CHECK(first->succeeded);
  auto second = create("b");
  REQUIRE(second);
  CHECK_FALSE(second->succeeded);  // omitted by the gateway: the default false
  REQUIRE(second->ranges.size() == 1);
  REQUIRE(second->ranges[0].kvs.size() == 1);
  const KeyValue held = second->ranges[0].kvs[0];
  CHECK(held.value == "a");
  CHECK(held.create_revision == first->revision);
  // Update on mod_revision: a stale revision fails, the current one succeeds.
  auto stale = await(io, c.txn({.compare = {compare_mod_revision("leader", held.mod_revision - 1)},
                                .success = {op_put("leader", "c")}}));
  REQUIRE(stale);
  CHECK_FALSE(stale->succeeded);
  auto fresh = await(io, c.txn({.compare = {compare_mod_revision("leader", held.mod_revision)},
                                .success = {op_put("leader", "c"), op_put("other", "x")}}));
  REQUIRE(fresh);
  CHECK(fresh->succeeded);
  CHECK(await(io, c.range("leader"))->kvs.at(0).value == "c");
}

TEST_CASE("a lease keeps its keys alive and its expiry or revocation deletes them", "[client]") {
  EtcdCluster cluster;
  boost::asio::io_context io;
  Client c(io.get_executor(), options_for(cluster));
  auto lease = await(io, c.grant(1s));
  REQUIRE(lease);
  CHECK(lease->ttl == 1s);
  auto start = put(io, c, "node/a", "x", lease->id);
  REQUIRE(start);
  auto kept = await(io, c.keep_alive(lease->id));
  REQUIRE(kept);
  CHECK(*kept == 1s);
  // Not kept alive any more: the key is deleted when the lease expires (TTL, and etcd's
  // lease checks run every 500 ms), seen by a watch from the put's revision.
  std::vector<WatchEvent> seen;
  auto began = std::chrono::steady_clock::now();
  auto watch = Watch::start(
      io.get_executor(), cluster.endpoints(), {.key = "node/a", .start_revision = *start},
      [&](std::vector<WatchEvent> evs) { seen.insert(seen.end(), evs.begin(), evs.end()); },
      [](Status s) { FAIL(s.to_string()); });
  REQUIRE(run_until(
      io, [&] { return seen.size() >= 2; }, 10s));
  auto took = std::chrono::steady_clock::now() - began;
  CHECK_FALSE(seen[0].deleted);
  CHECK(seen[1].deleted);
  CHECK(took < 4s);
  watch->cancel();
  auto gone = await(io, c.keep_alive(lease->id));
  CHECK(gone.status().code() == ErrorCode::kNotFound);
  // Revocation deletes at once.
  auto second = await(io, c.grant(30s));
  REQUIRE(second);
  REQUIRE(put(io, c, "node/b", "y", second->id));
  REQUIRE(await(io, c.revoke(second->id)));
  CHECK(await(io, c.range("node/b"))->kvs.empty());
  CHECK(await(io, c.keep_alive(second->id)).status().code() == ErrorCode::kNotFound);
  // A put on a lease that is gone is refused with kNotFound.
  CHECK(put(io, c, "node/c", "z", second->id).status().code() == ErrorCode::kNotFound);
}

TEST_CASE("a watch from a revision sees every change after it, in order, once", "[client]") {
  EtcdCluster cluster;
  boost::asio::io_context io;
  Client c(io.get_executor(), options_for(cluster));
  auto base = put(io, c, "w", "0");
  REQUIRE(base);
  REQUIRE(put(io, c, "w", "1"));  // before the watch starts: seen from the revision
  REQUIRE(put(io, c, "elsewhere", "-"));
  std::vector<WatchEvent> seen;
  auto watch = Watch::start(
      io.get_executor(), cluster.endpoints(), {.key = "w", .start_revision = *base + 1},
      [&](std::vector<WatchEvent> evs) { seen.insert(seen.end(), evs.begin(), evs.end()); },
      [](Status s) { FAIL(s.to_string()); });
  REQUIRE(await(io, c.txn({.success = {op_put("w", "2"), op_put("elsewhere", "3")}})));
  REQUIRE(remove(io, c, "w"));
  for (int i = 0; i < 50; ++i) REQUIRE(put(io, c, "w", std::to_string(i)));
  REQUIRE(run_until(
      io, [&] { return seen.size() >= 53; }, 10s));
  CHECK(seen.size() == 53);
  CHECK(seen[0].kv.value == "1");
  CHECK(seen[1].kv.value == "2");  // from the txn; its other key is not watched
  CHECK(seen[1].kv.mod_revision == seen[0].kv.mod_revision + 2);
  CHECK(seen[2].deleted);
  CHECK(seen[2].kv.key == "w");
  for (int i = 0; i < 50; ++i) CHECK(seen[3 + i].kv.value == std::to_string(i));
  CHECK(watch->next_revision() == seen.back().kv.mod_revision + 1);
  watch->cancel();
  REQUIRE(put(io, c, "w", "x"));
  io.run_for(100ms);
  CHECK(seen.size() == 53);  // nothing after cancel()
}

TEST_CASE("calls fail over to the next endpoint, and with all down the error names them all",
          "[client]") {
  EtcdCluster cluster;
  boost::asio::io_context io;
  const Endpoint dead{"127.0.0.1", static_cast<std::uint16_t>(ddp::testing::free_port())};
  Client c(io.get_executor(),
           {.endpoints = {dead, cluster.endpoints()[0]}, .request_timeout = 15s});
  REQUIRE(put(io, c, "k", "v"));  // the dead endpoint first
  Client down(
      io.get_executor(),
      {.endpoints = {dead, {"127.0.0.1", static_cast<std::uint16_t>(ddp::testing::free_port())}},
       .request_timeout = 1s});
  auto began = std::chrono::steady_clock::now();
  auto r = await(io, down.range("k"));
  CHECK(std::chrono::steady_clock::now() - began < 3s);
  REQUIRE_FALSE(r);
  CHECK(r.status().code() == ErrorCode::kIo);
  CHECK_THAT(r.status().message(), Catch::Contains(dead.to_string()));
  CHECK_THAT(r.status().message(), Catch::Contains("cannot reach etcd"));
}

TEST_CASE("a 3-member cluster: the member a watch and calls use is killed", "[client][cluster]") {
  EtcdCluster cluster(3);
  boost::asio::io_context io;
  // Member 0 answers first (the others may still start): then the client and the watch,
  // which both begin with endpoint 0, are on the member this test kills.
  ClientOptions first_only = options_for(cluster);
  first_only.endpoints = {cluster.endpoints()[0]};
  REQUIRE(await(io, Client(io.get_executor(), first_only).range("x")));
  Client c(io.get_executor(), options_for(cluster));
  auto base = put(io, c, "x", "0");
  REQUIRE(base);
  std::vector<WatchEvent> seen;
  auto watch = Watch::start(
      io.get_executor(), cluster.endpoints(), {.key = "x", .start_revision = *base + 1},
      [&](std::vector<WatchEvent> evs) { seen.insert(seen.end(), evs.begin(), evs.end()); },
      [](Status s) { FAIL(s.to_string()); });
  REQUIRE(put(io, c, "x", "1"));
  REQUIRE(run_until(
      io, [&] { return seen.size() == 1; }, 10s));
  cluster.signal(0, SIGKILL);
  for (int i = 2; i < 6; ++i) REQUIRE(put(io, c, "x", std::to_string(i)));  // on another member
  REQUIRE(run_until(
      io, [&] { return seen.size() == 5; }, 15s));
  for (int i = 0; i < 5; ++i) CHECK(seen[i].kv.value == std::to_string(i + 1));
  watch->cancel();
}

TEST_CASE("TLS with a CA and a client certificate, and a wrong CA or missing files named",
          "[client][tls]") {
  const std::string certs = ddp::testing::make_test_certificates();
  EtcdCluster cluster(1, {}, certs);
  boost::asio::io_context io;
  ClientOptions o = options_for(cluster);
  o.transport = {.tls = true,
                 .cacert = certs + "/ca.pem",
                 .cert = certs + "/client.pem",
                 .key = certs + "/client.key"};
  Client c(io.get_executor(), o);
  auto written = put(io, c, "secure", "yes");
  REQUIRE(written);
  CHECK(await(io, c.range("secure"))->kvs.at(0).value == "yes");
  std::vector<WatchEvent> seen;
  auto watch = Watch::start(
      io.get_executor(), cluster.endpoints(),
      {.key = "secure", .start_revision = *written, .transport = o.transport},
      [&](std::vector<WatchEvent> evs) { seen.insert(seen.end(), evs.begin(), evs.end()); },
      [](Status s) { FAIL(s.to_string()); });
  REQUIRE(run_until(
      io, [&] { return seen.size() == 1; }, 10s));
  watch->cancel();

  ClientOptions wrong_ca = o;
  wrong_ca.transport.cacert = certs + "/other.pem";
  auto refused = await(io, Client(io.get_executor(), wrong_ca).range("secure"));
  REQUIRE_FALSE(refused);
  CHECK(refused.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(), Catch::Contains("TLS handshake failed"));

  ClientOptions missing = o;
  missing.transport.cacert = certs + "/nothing.pem";
  auto unloadable = await(io, Client(io.get_executor(), missing).range("secure"));
  REQUIRE_FALSE(unloadable);
  CHECK(unloadable.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(unloadable.status().message(), Catch::Contains("cacert=" + certs + "/nothing.pem"));

  ClientOptions plain = o;  // http to an https endpoint: refused (retried until the timeout)
  plain.transport = {};
  plain.request_timeout = 1s;
  CHECK_FALSE(await(io, Client(io.get_executor(), plain).range("secure")));
  std::filesystem::remove_all(certs);
}

}  // namespace ddp::etcd
