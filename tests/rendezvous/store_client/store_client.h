// A blocking TCPStore client (rendezvous::StoreClient), speaking the modern (PyTorch >= 2.2)
// numbering: it sends VALIDATE first, so it works against ddp-rendezvous and PyTorch >= 2.2
// servers.
//
// Every call takes a timeout (default: the one given to connect()). A WAIT (also the implicit
// wait of get() and multi_get()) that times out is cancelled on the server with CANCEL_WAIT,
// like PyTorch's client, and the connection stays usable. Any other failure (timeout, peer
// gone, bad reply) leaves the connection unusable: later calls return kPeerGone; connect anew.
//
// Threading: one StoreClient per thread (it owns its own io_context and runs it inside each
// call). Not for use from inside another io_context's handlers.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

class StoreClient {
 public:
  using Duration = std::chrono::milliseconds;
  static constexpr Duration kUseDefault{-1};

  // Resolves, connects and sends VALIDATE, all within `timeout`, which also becomes the
  // default per-call timeout. kTimeout, kIo (connection refused, unresolvable host).
  static Result<std::unique_ptr<StoreClient>> connect(const std::string& host, std::uint16_t port,
                                                      Duration timeout = std::chrono::seconds(30));
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  Status set(std::string_view key, std::string_view value, Duration timeout = kUseDefault);
  // Waits for the key (like PyTorch's get), then returns its value.
  Result<std::string> get(std::string_view key, Duration timeout = kUseDefault);
  Result<std::int64_t> add(std::string_view key, std::int64_t delta,
                           Duration timeout = kUseDefault);
  // The value stored after the call (see Store::compare_set for the missing-key cases).
  Result<std::string> compare_set(std::string_view key, std::string_view expected,
                                  std::string_view desired, Duration timeout = kUseDefault);
  Result<bool> check(const std::vector<std::string>& keys, Duration timeout = kUseDefault);
  // kTimeout when the keys do not all exist in time (the server-side wait is cancelled).
  Status wait(const std::vector<std::string>& keys, Duration timeout = kUseDefault);
  // True when the key existed.
  Result<bool> delete_key(std::string_view key, Duration timeout = kUseDefault);
  Result<std::int64_t> num_keys(Duration timeout = kUseDefault);
  Status append(std::string_view key, std::string_view value, Duration timeout = kUseDefault);
  // Waits for all keys, then returns their values in order.
  Result<std::vector<std::string>> multi_get(const std::vector<std::string>& keys,
                                             Duration timeout = kUseDefault);
  Status multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                   Duration timeout = kUseDefault);
  Result<std::vector<std::string>> list_keys(Duration timeout = kUseDefault);
  // Round trip with a nonce; returns the measured round-trip time.
  Result<std::chrono::nanoseconds> ping(Duration timeout = kUseDefault);
  Status queue_push(std::string_view key, std::string_view value, Duration timeout = kUseDefault);
  // Non-blocking pop: nullopt when the queue is empty.
  Result<std::optional<std::string>> queue_pop(std::string_view key,
                                               Duration timeout = kUseDefault);
  Result<std::int64_t> queue_len(std::string_view key, Duration timeout = kUseDefault);

 private:
  using Clock = std::chrono::steady_clock;
  StoreClient(Duration timeout);

  Clock::time_point deadline(Duration timeout) const;
  Status usable() const;
  Status send(const Request& request, Clock::time_point deadline);
  // Makes at least `n` unread reply bytes available.
  Status fill(std::size_t n, Clock::time_point deadline);
  Result<std::uint8_t> read_u8(Clock::time_point deadline);
  // A raw integer of the reply (u32 or i64); a failure breaks the connection.
  template <typename T>
  Result<T> read_int(Clock::time_point deadline);
  Result<std::string> read_bytes(Clock::time_point deadline);
  // Sends WAIT and awaits STOP_WAITING; on timeout cancels it on the server.
  Status wait_until(const std::vector<std::string>& keys, Clock::time_point deadline);
  // Runs io_ until `done` or the deadline; on the deadline cancels the socket's operations.
  Status run_until(const bool& done, Clock::time_point deadline, const char* what);
  Status broken(Status s);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  Duration default_timeout_;
  std::string in_;  // received, not yet consumed reply bytes
  bool broken_ = false;
  std::string broken_reason_;
};

}  // namespace ddp::rendezvous
