// A lease kept alive, in the manner of etcd's concurrency.Session: open() grants a lease of a
// TTL; from then a keep-alive goes every TTL/3 on the session's own client (its calls bounded
// by a third of the TTL, so one slow call cannot eat the lease), and `on_lost` is told once
// when the lease is gone: kPeerGone when etcd says it expired or was revoked (kNotFound), or
// when no keep-alive got through for the TTL (etcd unreachable). Keys put under lease()
// vanish with it. The owner revokes it (revoke(), or a blocking call at exit); close() only
// stops keeping it alive.
//
// Threading: one io_context thread. After close() or destruction no callback runs.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/lifetime.h"
#include "common/status.h"
#include "etcd/client.h"

namespace ddp::etcd {

class Session {
 public:
  // The lease is granted through `client`; keep-alives use a client of `keep_alive`'s
  // endpoints and transport. An error when the grant fails (nothing to keep then).
  static boost::asio::awaitable<Result<std::unique_ptr<Session>>> open(
      Client& client, ClientOptions keep_alive, std::chrono::seconds ttl,
      std::function<void(Status)> on_lost);
  // The keep-alive client's options for `ttl`: calls bounded by a third of it.
  static ClientOptions keep_alive_options(ClientOptions base, std::chrono::seconds ttl);

  // `lease` granted for `ttl` (the rhythm and the bound on an unreachable etcd).
  Session(boost::asio::any_io_executor ex, ClientOptions keep_alive, Lease lease,
          std::chrono::seconds ttl, std::function<void(Status)> on_lost);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::int64_t lease() const { return lease_.id; }
  // The TTL etcd granted (it may raise a small one: 1.5 x its election timeout).
  std::chrono::seconds ttl() const { return lease_.ttl; }
  // Stops keeping the lease alive (it then expires at its TTL); no on_lost after.
  void close();
  // close(), then the lease revoked: its keys go at once.
  boost::asio::awaitable<Status> revoke();

 private:
  boost::asio::awaitable<void> keep_alive();

  Client client_;
  Lease lease_;
  std::chrono::seconds ttl_;
  std::function<void(Status)> on_lost_;
  boost::asio::steady_timer timer_;
  Lifetime life_;  // last: for the keep-alive loop in flight
};

}  // namespace ddp::etcd
