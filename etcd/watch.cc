#include "etcd/watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace ddp::etcd {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// JSON work lives outside the coroutines (GCC 12 cannot compile nlohmann's string-literal
// subscripts inside a coroutine: "array used as initializer").
Json create_request(const WatchOptions& o, std::int64_t start_revision) {
  Json create = {{"key", base64_encode(o.key)}};
  if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
  return {{"create_request", std::move(create)}};
}

// One line of the stream: its events from revision `from` on (older ones were delivered
// before a reconnect), or why the stream is over.
Result<std::vector<WatchEvent>> parse_line(const Json& line, std::int64_t from,
                                           const std::string& where) {
  if (line.contains("error")) {
    const Json& e = line["error"];
    auto code = e.is_object() ? int_field(e, "grpc_code") : Result<std::int64_t>(2);
    return grpc_status(code ? static_cast<int>(*code) : 2,
                       e.is_object() ? e.value("message", e.dump()) : e.dump(), where);
  }
  const Json& j = line.contains("result") ? line["result"] : line;
  if (j.value("canceled", false)) {
    auto compacted = int_field(j, "compact_revision");
    if (compacted && *compacted > 0) {
      return invalid_argument("etcd watch from revision " + std::to_string(from) +
                              ": compacted up to " + std::to_string(*compacted));
    }
    return io_error("etcd at " + where +
                    " cancelled the watch: " + j.value("cancel_reason", std::string("no reason")));
  }
  std::vector<WatchEvent> out;
  auto events = j.find("events");
  if (events == j.end() || !events->is_array()) return out;
  out.reserve(events->size());
  for (const auto& e : *events) {
    WatchEvent ev;
    ev.deleted = e.value("type", std::string("PUT")) == "DELETE";
    auto kv = decode_key_value(e.value("kv", Json::object()));
    if (!kv) return kv.status();
    ev.kv = std::move(kv).value();
    if (ev.kv.mod_revision < from) continue;  // delivered before a reconnect
    out.push_back(std::move(ev));
  }
  return out;
}

}  // namespace

std::shared_ptr<Watch> Watch::start(asio::any_io_executor ex, std::vector<Endpoint> endpoints,
                                    WatchOptions options, OnEvents on_events, OnError on_error) {
  auto watch = std::make_shared<Watch>(ex, std::move(endpoints), std::move(options),
                                       std::move(on_events), std::move(on_error));
  asio::co_spawn(
      ex, [watch]() -> asio::awaitable<void> { co_await watch->run(); }, asio::detached);
  return watch;
}

Watch::Watch(asio::any_io_executor ex, std::vector<Endpoint> endpoints, WatchOptions options,
             OnEvents on_events, OnError on_error)
    : ex_(std::move(ex)),
      endpoints_(std::move(endpoints)),
      options_(std::move(options)),
      on_events_(std::move(on_events)),
      on_error_(std::move(on_error)),
      next_revision_(options_.start_revision) {}

void Watch::cancel() {
  cancelled_ = true;
  if (stream_) stream_->close();
}

asio::awaitable<void> Watch::run() {
  auto self = shared_from_this();  // alive until the loop ends
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  std::size_t failures = 0;
  Status last;
  while (!cancelled_) {
    StreamingPost stream(ex_, options_.transport);
    const auto now = std::chrono::steady_clock::now();
    stream_ = &stream;
    Status s = co_await stream.open(endpoints_[current_], "/v3/watch",
                                    create_request(options_, next_revision_),
                                    now + options_.attempt_timeout);
    if (s) s = co_await read(stream);
    stream_ = nullptr;
    if (cancelled_) co_return;
    if (s.code() == ErrorCode::kOk) {
      failing_since.reset();  // a healthy stream ended by the server: reconnect at once
      failures = 0;
    }
    if (!retryable(s) && s.code() != ErrorCode::kOk) {
      on_error_(s);
      co_return;
    }
    last = s;
    if (!failing_since) failing_since = std::chrono::steady_clock::now();
    if (std::chrono::steady_clock::now() - *failing_since >= options_.reconnect_for) {
      on_error_(Status(s.code(), "lost the etcd watch on " + join_endpoints(endpoints_) + " for " +
                                     std::to_string(options_.reconnect_for.count()) +
                                     " ms: " + s.message()));
      co_return;
    }
    spdlog::debug("etcd watch: {}; reconnecting", s.message());
    current_ = (current_ + 1) % endpoints_.size();
    if (++failures % endpoints_.size() == 0) {
      // Every endpoint failed once: pause before the next pass (the cluster may be electing).
      asio::steady_timer pause(ex_, 200ms);
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }
}

asio::awaitable<Status> Watch::read(StreamingPost& stream) {
  bool healthy = false;
  for (;;) {
    auto line = co_await stream.next();
    if (cancelled_) co_return Status::ok();
    if (!line)
      co_return healthy&& line.status().code() == ErrorCode::kPeerGone
          ? io_error(line.status().message())
          : line.status();
    auto events = parse_line(*line, next_revision_, endpoints_[current_].to_string());
    if (!events) co_return events.status();
    healthy = true;
    if (events->empty()) continue;
    next_revision_ = std::max(next_revision_, events->back().kv.mod_revision + 1);
    on_events_(std::move(events).value());
    if (cancelled_) co_return Status::ok();
  }
}

}  // namespace ddp::etcd
