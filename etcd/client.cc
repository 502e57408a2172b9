#include "etcd/client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

namespace ddp::etcd {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

Result<RangeResult> decode_range(const Json& j) {
  RangeResult out;
  auto header = j.find("header");
  if (header != j.end()) {
    auto rev = int_field(*header, "revision");
    if (!rev) return rev.status();
    out.revision = *rev;
  }
  if (auto kvs = j.find("kvs"); kvs != j.end()) {
    if (!kvs->is_array()) return protocol_error("etcd range: 'kvs' is not a list");
    out.kvs.reserve(kvs->size());
    for (const auto& kv : *kvs) {
      auto decoded = decode_key_value(kv);
      if (!decoded) return decoded.status();
      out.kvs.push_back(std::move(decoded).value());
    }
  }
  return out;
}

Result<std::int64_t> header_revision(const Json& j) {
  auto header = j.find("header");
  if (header == j.end()) return protocol_error("etcd answer without a header");
  return int_field(*header, "revision");
}

// Request bodies and answer decoding live outside the coroutines (GCC 12 cannot compile
// nlohmann's string-literal subscripts inside a coroutine: "array used as initializer").
Json range_body(const std::string& key) { return op_range(key)["request_range"]; }
Json count_body(std::string prefix) {
  Json body = {{"key", base64_encode(prefix)}, {"count_only", true}};
  ++prefix.back();  // every key from `prefix` up to the next string with its length
  body["range_end"] = base64_encode(prefix);
  return body;
}
Result<std::int64_t> decode_count(const Json& j) { return int_field(j, "count"); }
Json txn_body(const Txn& txn) {
  return {{"compare", txn.compare}, {"success", txn.success}, {"failure", txn.failure}};
}
Json ttl_body(std::chrono::seconds ttl) { return {{"TTL", std::to_string(ttl.count())}}; }
Json id_body(std::int64_t id) { return {{"ID", std::to_string(id)}}; }

Result<TxnResult> decode_txn(const Json& j) {
  TxnResult out;
  out.succeeded = j.value("succeeded", false);
  auto rev = header_revision(j);
  if (!rev) return rev.status();
  out.revision = *rev;
  if (auto responses = j.find("responses"); responses != j.end() && responses->is_array()) {
    for (const auto& r : *responses) {
      if (auto range = r.find("response_range"); range != r.end()) {
        auto decoded = decode_range(*range);
        if (!decoded) return decoded.status();
        out.ranges.push_back(std::move(decoded).value());
      }
    }
  }
  return out;
}

Result<Lease> decode_grant(const Json& j) {
  if (auto e = j.find("error"); e != j.end() && e->is_string() && !e->get<std::string>().empty()) {
    return io_error("etcd lease grant: " + e->get<std::string>());
  }
  auto id = int_field(j, "ID");
  auto granted = int_field(j, "TTL");
  if (!id) return id.status();
  if (!granted) return granted.status();
  return Lease{*id, std::chrono::seconds(*granted)};
}

Result<std::chrono::seconds> decode_keep_alive(const Json& j, std::int64_t lease) {
  const Json& result = j.contains("result") ? j["result"] : j;
  if (result.contains("error")) return io_error("etcd lease keep-alive: " + result["error"].dump());
  auto ttl = int_field(result, "TTL");
  if (!ttl) return ttl.status();
  if (*ttl <= 0) {
    return not_found("etcd lease " + std::to_string(lease) + " expired or was revoked");
  }
  return std::chrono::seconds(*ttl);
}

}  // namespace

Json compare_create_revision(const std::string& key, std::int64_t revision) {
  return {{"key", base64_encode(key)},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", std::to_string(revision)}};
}
Json compare_mod_revision(const std::string& key, std::int64_t revision) {
  return {{"key", base64_encode(key)},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", std::to_string(revision)}};
}
Json op_put(const std::string& key, const std::string& value, std::int64_t lease) {
  Json put = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return {{"request_put", std::move(put)}};
}
Json op_range(const std::string& key) { return {{"request_range", {{"key", base64_encode(key)}}}}; }
Json op_delete(const std::string& key) {
  return {{"request_delete_range", {{"key", base64_encode(key)}}}};
}

Txn put_if_absent(const std::string& key, const std::string& value, std::int64_t lease) {
  Txn txn;
  txn.compare.push_back(compare_create_revision(key, 0));
  txn.success.push_back(op_put(key, value, lease));
  return txn;
}

Client::Client(asio::any_io_executor ex, ClientOptions options)
    : ex_(std::move(ex)), options_(std::move(options)) {}

asio::awaitable<Result<Json>> Client::call(std::string path, Json body) {
  const auto start = std::chrono::steady_clock::now();
  const auto overall = start + options_.request_timeout;
  Status last = io_error("no etcd endpoint");
  for (std::size_t tries = 0;; ++tries) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= overall && tries > 0) break;
    if (tries > 0 && tries % options_.endpoints.size() == 0) {
      // Every endpoint failed once: a pause before the next pass (a quorum electing a
      // leader, a member restarting), not a tight loop.
      asio::steady_timer pause(ex_,
                               std::min<std::chrono::steady_clock::duration>(200ms, overall - now));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      if (std::chrono::steady_clock::now() >= overall) break;
    }
    const std::size_t index = current_;
    const auto deadline =
        std::min(overall, std::chrono::steady_clock::now() + options_.attempt_timeout);
    auto answer =
        co_await post_json(options_.endpoints[index], path, body, deadline, options_.transport);
    if (answer || !retryable(answer.status())) co_return answer;
    last = answer.status();
    if (current_ == index) current_ = (index + 1) % options_.endpoints.size();
    if (options_.endpoints.size() > 1) {
      spdlog::debug("etcd: {}; trying {}", last.message(),
                    options_.endpoints[current_].to_string());
    }
  }
  co_return Status(last.code(), "cannot reach etcd (" + join_endpoints(options_.endpoints) +
                                    ") within " + std::to_string(options_.request_timeout.count()) +
                                    " ms: " + last.message());
}

asio::awaitable<Result<RangeResult>> Client::range(std::string key) {
  auto j = co_await call("/v3/kv/range", range_body(key));
  if (!j) co_return j.status();
  co_return decode_range(*j);
}

asio::awaitable<Result<std::int64_t>> Client::count_prefix(std::string prefix) {
  auto j = co_await call("/v3/kv/range", count_body(std::move(prefix)));
  if (!j) co_return j.status();
  co_return decode_count(*j);
}

asio::awaitable<Result<TxnResult>> Client::txn(Txn txn) {
  auto j = co_await call("/v3/kv/txn", txn_body(txn));
  if (!j) co_return j.status();
  co_return decode_txn(*j);
}

asio::awaitable<Result<Lease>> Client::grant(std::chrono::seconds ttl) {
  auto j = co_await call("/v3/lease/grant", ttl_body(ttl));
  if (!j) co_return j.status();
  co_return decode_grant(*j);
}

asio::awaitable<Result<std::chrono::seconds>> Client::keep_alive(std::int64_t lease) {
  // A stream in gRPC; through the gateway one request gets one {"result": ...} answer.
  auto j = co_await call("/v3/lease/keepalive", id_body(lease));
  if (!j) co_return j.status();
  co_return decode_keep_alive(*j, lease);
}

asio::awaitable<Status> Client::revoke(std::int64_t lease) {
  auto j = co_await call("/v3/lease/revoke", id_body(lease));
  co_return j.status();
}

Result<Json> call_blocking(const ClientOptions& options, const std::string& path,
                           const Json& body) {
  asio::io_context io;
  Client client(io.get_executor(), options);
  std::optional<Result<Json>> out;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out.emplace(co_await client.call(path, body)); },
      asio::detached);
  io.run();
  if (!out) return internal_error("etcd call " + path + " did not complete");
  return std::move(*out);
}

}  // namespace ddp::etcd
