// K simulated agents through etcd: each holds a lease and watches its own event prefix, as a
// real agent does; one real EtcdCoordinator (the membership Job fed by etcd keys) runs in the
// same process. Measured: the K JOIN keys written at once -> every agent has its RoundComplete
// (ranks checked: a permutation, offsets the prefix sums, one store address).
//   etcd_sim_bench ENDPOINTS K [K...]      (one io_context thread; prints one JSON line per K)
// Designated initializers leave the other fields at their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/watch.h"
#include "rendezvous/etcd_hub/etcd_coordinator.h"
#include "rendezvous/etcd_hub/etcd_keys.h"
#include "rendezvous/membership/wire.h"

namespace {

namespace asio = boost::asio;
namespace membership = ddp::rendezvous::membership;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Runs `a` to completion on `io` (other work keeps running meanwhile).
template <typename T>
T run(asio::io_context& io, asio::awaitable<T> a) {
  std::optional<T> out;
  asio::co_spawn(
      io,
      [&, a = std::move(a)]() mutable -> asio::awaitable<void> {
        out.emplace(co_await std::move(a));
      },
      asio::detached);
  while (!out) io.run_one();
  return std::move(*out);
}

int bench(const std::vector<ddp::etcd::Endpoint>& endpoints, int k) {
  asio::io_context io;
  ddp::etcd::Client client(
      io.get_executor(),
      {.endpoints = endpoints, .request_timeout = 60s, .attempt_timeout = 30s, .transport = {}});
  const std::string run_id = "sim-" + std::to_string(k) + "-" + std::to_string(::getpid());
  ddp::rendezvous::EtcdKeys keys("/ddprun-bench", run_id);
  const auto connect_start = Clock::now();
  auto coordinator_lease = run(io, client.grant(60s));
  if (!coordinator_lease)
    return std::fprintf(stderr, "%s\n", coordinator_lease.status().message().c_str()), 1;
  // The coordinator's writes are fenced on its claim of P/coordinator, as an elected agent's.
  auto claim = run(io, client.txn(ddp::etcd::put_if_absent(keys.coordinator(), "coordinator",
                                                           coordinator_lease->id)));
  if (!claim || !claim->succeeded)
    return std::fprintf(stderr, "cannot claim %s\n", keys.coordinator().c_str()), 1;
  ddp::rendezvous::EtcdCoordinator coordinator(
      io, client, keys, run_id, coordinator_lease->id, "coordinator", claim->revision,
      /*gone_revision=*/0, [](ddp::Status s) {
        std::fprintf(stderr, "coordinator: %s\n", s.message().c_str());
        std::exit(1);
      });
  coordinator.start();
  std::vector<std::int64_t> leases(k);
  std::vector<std::optional<membership::RoundComplete>> rounds(k);
  std::vector<std::shared_ptr<ddp::etcd::Watch>> watches;
  int assigned = 0;
  Clock::time_point done{};
  auto base = run(io, client.range(keys.job()));
  for (int i = 0; i < k; ++i) {
    auto lease = run(io, client.grant(60s));
    if (!lease) return std::fprintf(stderr, "%s\n", lease.status().message().c_str()), 1;
    leases[i] = lease->id;
    const std::string node = "sim-" + std::to_string(i);
    watches.push_back(ddp::etcd::Watch::start(
        io.get_executor(), endpoints,
        {.key = keys.events(node),
         .range_end = ddp::etcd::prefix_end(keys.events(node)),
         .start_revision = base->revision + 1,
         .reconnect_for = 10s,
         .attempt_timeout = 10s},
        [&, i](std::vector<ddp::etcd::WatchEvent> events) {
          for (auto& e : events) {
            auto d = membership::decode_push(e.kv.value);
            if (auto* r = std::get_if<membership::RoundComplete>(&d.message); r && !rounds[i]) {
              rounds[i] = *r;
              if (++assigned == k) done = Clock::now();
            }
          }
        },
        [](ddp::Status s) {
          std::fprintf(stderr, "watch: %s\n", s.message().c_str());
          std::exit(1);
        }));
  }
  const auto connected = Clock::now();
  const auto start = Clock::now();
  int written = 0;
  for (int i = 0; i < k; ++i) {
    membership::JoinRequest join;
    join.run_id = run_id;
    join.config.min_nodes = join.config.max_nodes = static_cast<std::uint32_t>(k);
    join.config.join_timeout = 600s;
    join.node = {"sim-" + std::to_string(i),
                 "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256),
                 static_cast<std::uint16_t>(20000 + i), static_cast<std::uint32_t>(1 + i % 8)};
    asio::co_spawn(
        io,
        [&, i, join]() -> asio::awaitable<void> {
          auto r = co_await client.txn(ddp::etcd::put_if_absent(
              keys.node("sim-" + std::to_string(i)), membership::encode_request(join), leases[i]));
          if (!r || !r->succeeded) {
            std::fprintf(stderr, "join %d failed\n", i);
            std::exit(1);
          }
          ++written;
        },
        asio::detached);
  }
  while (assigned < k) io.run_one();
  // Check the assignment.
  std::set<std::uint32_t> ranks;
  std::set<std::string> stores;
  std::vector<std::pair<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>>> by_rank;
  for (int i = 0; i < k; ++i) {
    ranks.insert(rounds[i]->group_rank);
    stores.insert(rounds[i]->store_addr + ":" + std::to_string(rounds[i]->store_port));
    by_rank.push_back(
        {rounds[i]->group_rank, {rounds[i]->rank_offset, rounds[i]->local_world_size}});
  }
  std::sort(by_rank.begin(), by_rank.end());
  std::uint64_t offset = 0;
  bool ok = ranks.size() == static_cast<std::size_t>(k) &&
            *ranks.rbegin() == static_cast<std::uint32_t>(k - 1) && stores.size() == 1;
  for (auto& [rank, p] : by_rank) {
    ok = ok && p.first == offset;
    offset += p.second;
  }
  std::printf(
      "{\"agents\": %d, \"world_size\": %llu, \"connect_ms\": %.1f, \"join_to_all_assigned_ms\": "
      "%.1f, \"ok\": %s}\n",
      k, static_cast<unsigned long long>(offset), ms(connected - connect_start), ms(done - start),
      ok ? "true" : "false");
  std::fflush(stdout);
  for (auto& w : watches) w->cancel();
  coordinator.stop();
  for (auto lease : leases) (void)run(io, client.revoke(lease));
  (void)run(io, client.revoke(coordinator_lease->id));
  (void)run(io, client.remove(keys.job(), ddp::etcd::prefix_end(keys.job())));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: etcd_sim_bench ENDPOINTS K [K...]\n");
    return 2;
  }
  auto endpoints = ddp::etcd::parse_endpoints(argv[1]);
  if (!endpoints) return std::fprintf(stderr, "%s\n", endpoints.status().message().c_str()), 2;
  for (int i = 2; i < argc; ++i) {
    if (int rc = bench(*endpoints, std::atoi(argv[i])); rc != 0) return rc;
  }
  return 0;
}
