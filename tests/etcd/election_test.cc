// etcd::Election against a real etcd (tests/etcd/etcd_cluster.h): of two contenders one wins
// with a fence revision; when the winner's lease is revoked the other hears the key vacated
// and wins the next campaign, with a later fence.
#include "etcd/election.h"

#include "etcd/session.h"
#include "tests/catch.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_util.h"

namespace ddp::etcd {
namespace {

using namespace std::chrono_literals;
using testing::await;
using testing::run_until;

TEST_CASE("the loser of an election hears the winner's lease end and wins next", "[election]") {
  testing::EtcdCluster cluster;
  boost::asio::io_context io;
  ClientOptions options;
  options.endpoints = cluster.endpoints();
  options.request_timeout = 15s;
  Client client(io.get_executor(), options);
  std::vector<Status> lost;
  auto open = [&] {
    auto s = await(io, Session::open(client, Session::keep_alive_options(options, 5s), 5s,
                                     [&](Status why) { lost.push_back(why); }));
    REQUIRE(s);
    return std::move(*s);
  };
  auto a_session = open();
  auto b_session = open();
  Election a(client, "/e/leader", a_session->lease());
  Election b(client, "/e/leader", b_session->lease());
  auto before = await(io, client.range("/e/leader"));
  REQUIRE(before);
  std::vector<std::int64_t> b_vacated;
  b.observe(
      before->revision + 1, 5s, [&](std::int64_t rev) { b_vacated.push_back(rev); },
      [&](Status why) { lost.push_back(why); });

  // A campaign whose extra compare fails takes nothing, and says nobody holds the key.
  auto blocked = await(io, a.campaign("a", {compare_mod_revision("/e/other", 12345)}));
  REQUIRE(blocked);
  CHECK_FALSE(blocked->mine);
  CHECK(blocked->value.empty());
  auto still_free = await(io, client.range("/e/leader"));
  REQUIRE(still_free);
  CHECK(still_free->kvs.empty());

  auto a_won = await(io, a.campaign("a"));
  REQUIRE(a_won);
  REQUIRE(a_won->mine);
  auto held = await(io, client.range("/e/leader"));
  REQUIRE(held);
  REQUIRE(held->kvs.size() == 1);
  CHECK(held->kvs[0].value == "a");
  CHECK(a_won->revision == held->kvs[0].create_revision);  // the fence is the key's creation

  auto b_first = await(io, b.campaign("b"));
  REQUIRE(b_first);
  CHECK_FALSE(b_first->mine);  // a holds it, and b is told who
  CHECK(b_first->value == "a");
  CHECK(b_first->revision == a_won->revision);
  CHECK_FALSE(run_until(
      io, [&] { return !b_vacated.empty(); }, 500ms));  // not vacated yet

  REQUIRE(await(io, a_session->revoke()));
  REQUIRE(run_until(
      io, [&] { return !b_vacated.empty(); }, 10s));
  CHECK(b_vacated.size() == 1);
  CHECK(b_vacated[0] > a_won->revision);
  auto b_won = await(io, b.campaign("b"));
  REQUIRE(b_won);
  REQUIRE(b_won->mine);
  CHECK(b_won->revision > b_vacated[0]);
  CHECK(lost.empty());
  CHECK(await(io, b_session->revoke()));
}

}  // namespace
}  // namespace ddp::etcd
