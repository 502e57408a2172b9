// etcd::Session against a real etcd (tests/etcd/etcd_cluster.h): its lease outlives its TTL
// while kept alive; its loss is told once, as an expired lease or as an unreachable etcd.
#include "etcd/session.h"

#include <csignal>

#include "tests/catch.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_util.h"

namespace ddp::etcd {
namespace {

using namespace std::chrono_literals;
using testing::await;
using testing::run_until;

struct Fixture {
  testing::EtcdCluster cluster;
  boost::asio::io_context io;
  ClientOptions options;
  std::unique_ptr<Client> client;
  std::vector<Status> lost;

  Fixture() {
    options.endpoints = cluster.endpoints();
    options.request_timeout = 15s;
    client = std::make_unique<Client>(io.get_executor(), options);
  }
  std::unique_ptr<Session> open() {
    auto s = await(io, Session::open(*client, Session::keep_alive_options(options, 2s), 2s,
                                     [this](Status why) { lost.push_back(why); }));
    REQUIRE(s);
    return std::move(*s);
  }
  bool has(const std::string& key) {
    auto r = await(io, client->range(key));
    REQUIRE(r);
    return !r->kvs.empty();
  }
};

TEST_CASE("a session keeps its lease past its TTL, and revoke() deletes its keys", "[session]") {
  Fixture f;
  auto session = f.open();
  REQUIRE(ddp::testing::put(f.io, *f.client, "/s/k", "v", session->lease()));
  // Three TTLs: without keep-alives the key would be gone after one.
  CHECK_FALSE(run_until(
      f.io, [&] { return !f.lost.empty(); }, 6s));
  CHECK(f.has("/s/k"));
  CHECK(await(f.io, session->revoke()));
  CHECK_FALSE(f.has("/s/k"));
  CHECK_FALSE(run_until(
      f.io, [&] { return !f.lost.empty(); }, 1s));  // revoked by its owner: not a loss
}

TEST_CASE("a session whose lease was revoked elsewhere is told once it expired", "[session]") {
  Fixture f;
  auto session = f.open();
  REQUIRE(await(f.io, f.client->revoke(session->lease())));
  REQUIRE(run_until(
      f.io, [&] { return !f.lost.empty(); }, 5s));
  CHECK(f.lost[0].code() == ErrorCode::kPeerGone);
  CHECK_THAT(f.lost[0].message(), Catch::Contains("lease expired"));
  CHECK_FALSE(run_until(
      f.io, [&] { return f.lost.size() > 1; }, 2s));  // once
}

TEST_CASE("a session that cannot reach etcd for its TTL is lost", "[session]") {
  Fixture f;
  auto session = f.open();
  f.cluster.signal(0, SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  REQUIRE(run_until(
      f.io, [&] { return !f.lost.empty(); }, 6s));
  CHECK(std::chrono::steady_clock::now() - stopped >= 2s - 2s / 3);
  CHECK(f.lost[0].code() == ErrorCode::kPeerGone);
  CHECK_THAT(f.lost[0].message(), Catch::Contains("lost etcd"));
  f.cluster.signal(0, SIGCONT);
  session->close();
}

}  // namespace
}  // namespace ddp::etcd
