// The etcd coordinator's fence against a real etcd (tests/etcd/etcd_cluster.h): its writes
// hold only while P/coordinator is still its claim (create_revision). A deposed coordinator
// writes nothing and reports kPeerGone; one whose claim holds writes the round.
#include <catch2/catch.hpp>

#include "rendezvous/etcd_hub/etcd_coordinator.h"
#include "rendezvous/membership/wire.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_util.h"

namespace ddp::rendezvous {
namespace {

namespace membership = ::ddp::rendezvous::membership;
using namespace std::chrono_literals;
using testing::await;
using testing::run_until;

std::string join_value() {
  membership::JoinRequest join;
  join.run_id = "job";
  join.config.min_nodes = join.config.max_nodes = 1;
  join.node = {"n1", "127.0.0.1", 1234, 1};
  return membership::encode_request(join);
}

TEST_CASE("a coordinator whose claim was taken writes nothing, the claim holder writes",
          "[coordinator]") {
  testing::EtcdCluster cluster;
  etcd::ClientOptions options;
  options.endpoints = cluster.endpoints();
  options.request_timeout = 15s;
  boost::asio::io_context io;
  etcd::Client client(io.get_executor(), options);
  const EtcdKeys keys("/t", "job");
  auto old_lease = await(io, client.grant(30s));
  auto new_lease = await(io, client.grant(30s));
  REQUIRE(old_lease);
  REQUIRE(new_lease);
  auto old_claim =
      await(io, client.txn(etcd::put_if_absent(keys.coordinator(), "old", old_lease->id)));
  REQUIRE((old_claim && old_claim->succeeded));
  REQUIRE(await(io, client.put(keys.node("n1"), join_value(), new_lease->id)));
  // Another agent took over: the old claim is gone (as when its lease expired), a new one made.
  REQUIRE(await(io, client.remove(keys.coordinator())));
  auto new_claim =
      await(io, client.txn(etcd::put_if_absent(keys.coordinator(), "new", new_lease->id)));
  REQUIRE((new_claim && new_claim->succeeded));
  auto written = [&] {
    auto ev = await(io, client.range(keys.job() + "ev/", etcd::prefix_end(keys.job() + "ev/")));
    auto state = await(io, client.range(keys.state()));
    REQUIRE((ev && state));
    return ev->kvs.size() + state->kvs.size();
  };

  // The deposed one: its round's events and state are refused; it says why.
  std::optional<Status> fatal;
  EtcdCoordinator deposed(io, client, keys, "job", old_lease->id, "old", old_claim->revision, 0,
                          [&](Status why) { fatal = why; });
  deposed.start();
  REQUIRE(run_until(
      io, [&] { return fatal.has_value(); }, 10s));
  CHECK(fatal->code() == ErrorCode::kPeerGone);
  CHECK_THAT(fatal->message(), Catch::Contains("no longer coordinates"));
  CHECK(written() == 0);

  // The holder of the claim: the round forms (1 node) and is written.
  std::optional<Status> unexpected;
  EtcdCoordinator holder(io, client, keys, "job", new_lease->id, "new", new_claim->revision, 0,
                         [&](Status why) { unexpected = why; });
  holder.start();
  REQUIRE(run_until(
      io, [&] { return written() >= 2; }, 10s));
  CHECK_FALSE(unexpected);
  holder.stop();
}

}  // namespace
}  // namespace ddp::rendezvous
