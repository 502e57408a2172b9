// An etcd v3 client over the JSON gateway (http_post.h): key reads, compare-and-swap
// transactions, leases. Every call goes to the current endpoint; a transport
// failure or an UNAVAILABLE answer (no leader, member stopping) moves to the next endpoint and
// tries again, round the list, until `request_timeout` after the call began; an answer from
// etcd (even an error such as an expired lease) is final. Watches: watch.h.
//
// Limits etcd imposes that callers must respect: 1.5 MiB per request, 128 operations per txn.
//
// Ownership and threading: create and call on one io_context thread; calls are coroutines
// (co_await them, or co_spawn them onto the same executor); several may be in flight (each
// uses its own connection). The client must outlive its calls.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "etcd/codec.h"
#include "etcd/endpoints.h"
#include "etcd/http_post.h"

namespace ddp::etcd {

struct ClientOptions {
  std::vector<Endpoint> endpoints;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};  // per call, all endpoints
  std::chrono::milliseconds attempt_timeout{std::chrono::seconds(2)};   // per endpoint try
  Transport transport;                                                  // http or https
};

struct RangeResult {
  std::int64_t revision = 0;  // the store's revision the answer reflects
  std::vector<KeyValue> kvs;
};

// Building blocks of a txn (etcdserverpb.Compare / RequestOp as the gateway spells them).
Json compare_create_revision(const std::string& key, std::int64_t revision);  // == revision
Json compare_mod_revision(const std::string& key, std::int64_t revision);     // == revision
Json op_put(const std::string& key, const std::string& value, std::int64_t lease = 0);
Json op_range(const std::string& key);
Json op_delete(const std::string& key);

struct Txn {
  std::vector<Json> compare;
  std::vector<Json> success;
  std::vector<Json> failure;
};
// Creates `key` only if it does not exist (create_revision == 0); fails otherwise.
Txn put_if_absent(const std::string& key, const std::string& value, std::int64_t lease = 0);

struct TxnResult {
  bool succeeded = false;  // omitted by the gateway when false
  std::int64_t revision = 0;
  // The range answers of the branch that ran, in op order (puts and deletes give none).
  std::vector<RangeResult> ranges;
};

struct Lease {
  std::int64_t id = 0;
  std::chrono::seconds ttl{0};
};

class Client {
 public:
  Client(boost::asio::any_io_executor ex, ClientOptions options);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }
  boost::asio::any_io_executor executor() const { return ex_; }

  // One gateway call (`path` such as "/v3/kv/range") with failover. The raw answer.
  boost::asio::awaitable<Result<Json>> call(std::string path, Json body);

  boost::asio::awaitable<Result<RangeResult>> range(std::string key);  // the key, if it exists
  // How many keys start with `prefix` (not empty).
  boost::asio::awaitable<Result<std::int64_t>> count_prefix(std::string prefix);
  boost::asio::awaitable<Result<TxnResult>> txn(Txn txn);

  boost::asio::awaitable<Result<Lease>> grant(std::chrono::seconds ttl);
  // The TTL the lease has again; kNotFound when it expired or was revoked.
  boost::asio::awaitable<Result<std::chrono::seconds>> keep_alive(std::int64_t lease);
  boost::asio::awaitable<Status> revoke(std::int64_t lease);

 private:
  boost::asio::any_io_executor ex_;
  ClientOptions options_;
  std::size_t current_ = 0;
};

// One call() on a private io_context, blocking the calling thread until it answers or
// options.request_timeout passed: for the last words of a process whose own io_context has
// stopped (revoking a lease at exit).
Result<Json> call_blocking(const ClientOptions& options, const std::string& path, const Json& body);

}  // namespace ddp::etcd
