// One etcd watch over the v3 gateway: a streaming POST to /v3/watch that answers with one JSON
// object per line, each wrapped in {"result": ...}. Events come in revision order from
// `start_revision` on; the watch remembers the revision after the last event it delivered and,
// when its connection breaks (member killed, restarted, network), opens a new one on the next
// endpoint from that revision, so no change is lost or repeated. The usual pattern: read the
// state (Client::range gives its revision R), then watch from R + 1.
//
// Errors (on_error, once, then nothing more): no endpoint answered for `reconnect_for`
// (kIo/kTimeout naming the endpoints), the start revision was compacted (kInvalidArgument),
// a malformed stream (kProtocol).
//
// Ownership and threading: start() on the io_context thread; callbacks run there, from the
// watch's own coroutine, never inside cancel(). cancel() stops it: no callback after it. The
// watch keeps itself alive while it runs.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "etcd/codec.h"
#include "etcd/endpoints.h"
#include "etcd/http_post.h"

namespace ddp::etcd {

struct WatchEvent {
  bool deleted = false;  // DELETE (the key's lease expired or it was deleted); else PUT
  KeyValue kv;           // for a DELETE only key and mod_revision are set
};

struct WatchOptions {
  std::string key;
  std::int64_t start_revision = 0;
  std::chrono::milliseconds reconnect_for{std::chrono::seconds(10)};
  std::chrono::milliseconds attempt_timeout{std::chrono::seconds(2)};
  Transport transport;
};

class Watch : public std::enable_shared_from_this<Watch> {
 public:
  using OnEvents = std::function<void(std::vector<WatchEvent>)>;
  using OnError = std::function<void(Status)>;

  static std::shared_ptr<Watch> start(boost::asio::any_io_executor ex,
                                      std::vector<Endpoint> endpoints, WatchOptions options,
                                      OnEvents on_events, OnError on_error);
  void cancel();
  // The first revision not delivered yet.
  std::int64_t next_revision() const { return next_revision_; }

  Watch(boost::asio::any_io_executor ex, std::vector<Endpoint> endpoints, WatchOptions options,
        OnEvents on_events, OnError on_error);

 private:
  boost::asio::awaitable<void> run();
  // Reads one connection's stream until it breaks; OK when cancelled.
  boost::asio::awaitable<Status> read(StreamingPost& stream);

  boost::asio::any_io_executor ex_;
  std::vector<Endpoint> endpoints_;
  WatchOptions options_;
  OnEvents on_events_;
  OnError on_error_;
  std::int64_t next_revision_ = 0;
  std::size_t current_ = 0;
  bool cancelled_ = false;
  StreamingPost* stream_ = nullptr;  // the open connection, for cancel()
};

}  // namespace ddp::etcd
