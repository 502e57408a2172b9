// The daemon's status port: read-only HTTP/1.1 (Boost.Beast) on its own listening socket,
// served from the daemon's one io_context, one coroutine per connection, answering from the
// daemon's live state through router.h. It never writes to the store or the registry.
//
// Defences (a status client must never disturb the store it sits beside):
//  - at most `max_connections` open at once; the next is answered 503 and closed at once;
//  - a request's header is capped (`max_header_bytes`, then 431) and a body is refused (413);
//  - reading a whole request, and writing a reply, each has a deadline (`request_timeout`):
//    a client that trickles bytes (slowloris) or never reads is closed when it expires;
//  - garbage is answered 400 and closed; at most `max_requests_per_connection` per keep-alive.
//
// Threading: the io_context's thread only; stop() and the destructor too.
// Lifetime: `daemon` must outlive this object; stop() (or destruction) closes every status
// connection, and their coroutines then finish without touching the daemon.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "rendezvous/server.h"

namespace ddp::rendezvous::status {

struct StatusOptions {
  std::string host;        // bind address as the store's --host; empty = every interface
  std::uint16_t port = 0;  // 0 picks a free port
  std::size_t max_connections = 64;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};
  std::uint32_t max_header_bytes = 8 * 1024;
  std::uint32_t max_requests_per_connection = 100;
};

class StatusServer {
 public:
  // Binds and listens before returning. Errors as rendezvous/bind.h, naming --status-port.
  static Result<std::unique_ptr<StatusServer>> start(boost::asio::io_context& io,
                                                     const Server& daemon, StatusOptions options);
  virtual ~StatusServer() = default;
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  virtual std::uint16_t port() const = 0;
  virtual std::string host() const = 0;
  // Stops accepting and closes every status connection. Idempotent.
  virtual void stop() = 0;

 protected:
  StatusServer() = default;
};

}  // namespace ddp::rendezvous::status
