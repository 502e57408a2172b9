#include "etcd/session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "etcd/endpoints.h"

namespace ddp::etcd {

namespace asio = boost::asio;
using namespace std::chrono_literals;

ClientOptions Session::keep_alive_options(ClientOptions base, std::chrono::seconds ttl) {
  const auto third = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(ttl) / 3, 300ms);
  base.request_timeout = third;
  base.attempt_timeout = std::min<std::chrono::milliseconds>(third, 1s);
  return base;
}

asio::awaitable<Result<std::unique_ptr<Session>>> Session::open(
    Client& client, ClientOptions keep_alive, std::chrono::seconds ttl,
    std::function<void(Status)> on_lost) {
  auto lease = co_await client.grant(ttl);
  if (!lease) co_return lease.status();
  co_return std::make_unique<Session>(co_await asio::this_coro::executor, std::move(keep_alive),
                                      *lease, ttl, std::move(on_lost));
}

Session::Session(asio::any_io_executor ex, ClientOptions keep_alive, Lease lease,
                 std::chrono::seconds ttl, std::function<void(Status)> on_lost)
    : client_(ex, std::move(keep_alive)),
      lease_(lease),
      ttl_(ttl),
      on_lost_(std::move(on_lost)),
      timer_(ex) {
  asio::co_spawn(ex, this->keep_alive(), asio::detached);
}

void Session::close() {
  life_.end();
  timer_.cancel();
}

asio::awaitable<Status> Session::revoke() {
  close();
  co_return co_await client_.revoke(lease_.id);
}

asio::awaitable<void> Session::keep_alive() {
  auto alive = life_.watch();
  auto last_ok = std::chrono::steady_clock::now();
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3;
  for (;;) {
    // The lease's own rhythm: a keep-alive every third of its TTL (heartbeats, not polling).
    timer_.expires_after(period);
    auto [ec] = co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || !alive) co_return;
    auto r = co_await client_.keep_alive(lease_.id);
    if (!alive) co_return;
    if (r) {
      last_ok = std::chrono::steady_clock::now();
      continue;
    }
    if (r.status().code() == ErrorCode::kNotFound) {
      close();
      co_return on_lost_(
          peer_gone("this node's etcd lease expired (etcd did not hear from it for " +
                    std::to_string(ttl_.count()) + " s); the job counts it as gone"));
    }
    if (std::chrono::steady_clock::now() - last_ok >= ttl_) {
      close();
      co_return on_lost_(peer_gone("lost etcd (" + join_endpoints(client_.options().endpoints) +
                                   ") for the lease TTL of " + std::to_string(ttl_.count()) +
                                   " s: " + r.status().message()));
    }
    spdlog::warn("etcd keep-alive failed ({}); retrying until the lease expires",
                 r.status().message());
  }
}

}  // namespace ddp::etcd
