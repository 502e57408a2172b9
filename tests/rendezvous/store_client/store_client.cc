#include "tests/rendezvous/store_client/store_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <random>

#include "common/codec.h"

namespace ddp::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;

StoreClient::StoreClient(Duration timeout) : socket_(io_), default_timeout_(timeout) {}
StoreClient::~StoreClient() = default;

Result<std::unique_ptr<StoreClient>> StoreClient::connect(const std::string& host,
                                                          std::uint16_t port, Duration timeout) {
  std::unique_ptr<StoreClient> client(new StoreClient(timeout));
  const auto until = Clock::now() + timeout;
  boost::system::error_code ec;
  tcp::resolver resolver(client->io_);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return io_error("cannot resolve store host '" + host + "': " + ec.message());
  bool done = false;
  asio::async_connect(client->socket_, endpoints,
                      [&](const boost::system::error_code& e, const tcp::endpoint&) {
                        ec = e;
                        done = true;
                      });
  if (Status s = client->run_until(done, until, "connect"); !s) return s;
  if (ec) {
    return io_error("cannot connect to store at " + host + ":" + std::to_string(port) + ": " +
                    ec.message());
  }
  client->socket_.set_option(tcp::no_delay(true), ec);
  Request validate{.op = Op::kValidate, .word = kValidateMagic};
  if (Status s = client->send(validate, until); !s) return s;
  return client;
}

StoreClient::Clock::time_point StoreClient::deadline(Duration timeout) const {
  return Clock::now() + (timeout == kUseDefault ? default_timeout_ : timeout);
}

Status StoreClient::broken(Status s) {
  if (!broken_) {
    broken_ = true;
    broken_reason_ = s.to_string();
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  return s;
}

Status StoreClient::usable() const {
  if (!broken_) return Status::ok();
  return peer_gone("store connection unusable after an earlier failure (" + broken_reason_ +
                   "); connect again");
}

Status StoreClient::run_until(const bool& done, Clock::time_point deadline, const char* what) {
  io_.restart();
  while (!done && io_.run_one_until(deadline) > 0) {
  }
  if (done) return Status::ok();
  // Deadline: cancel the pending operation and let its handler run before returning.
  boost::system::error_code ignored;
  socket_.cancel(ignored);
  io_.restart();
  while (!done && io_.run_one() > 0) {
  }
  return timeout_error(std::string("store ") + what + " timed out");
}

Status StoreClient::send(const Request& request, Clock::time_point deadline) {
  if (Status s = usable(); !s) return s;
  auto bytes = encode_request(Dialect::kModern, request);
  if (!bytes) return internal_error("no modern encoding for " + std::string(op_name(request.op)));
  bool done = false;
  boost::system::error_code ec;
  asio::async_write(socket_, asio::buffer(*bytes),
                    [&](const boost::system::error_code& e, std::size_t) {
                      ec = e;
                      done = true;
                    });
  if (Status s = run_until(done, deadline, "send"); !s) return broken(s);
  if (ec && ec != asio::error::operation_aborted) {
    return broken(peer_gone("store connection lost while sending: " + ec.message()));
  }
  return Status::ok();
}

Status StoreClient::fill(std::size_t n, Clock::time_point deadline) {
  if (Status s = usable(); !s) return s;
  // One read can take the rest of a large value (up to 1 MiB at a time).
  std::vector<char> chunk(std::clamp<std::size_t>(n - std::min(n, in_.size()), 4096, 1 << 20));
  while (in_.size() < n) {
    bool done = false;
    boost::system::error_code ec;
    std::size_t got = 0;
    socket_.async_read_some(asio::buffer(chunk),
                            [&](const boost::system::error_code& e, std::size_t k) {
                              ec = e;
                              got = k;
                              done = true;
                            });
    Status s = run_until(done, deadline, "reply");
    in_.append(chunk.data(), got);
    if (!s) return s;  // the caller decides whether a timeout breaks the connection
    if (ec) return broken(peer_gone("store connection lost: " + ec.message()));
  }
  return Status::ok();
}

Result<std::uint8_t> StoreClient::read_u8(Clock::time_point deadline) {
  if (Status s = fill(1, deadline); !s) return s;
  const auto v = static_cast<std::uint8_t>(in_[0]);
  in_.erase(0, 1);
  return v;
}

template <typename T>
Result<T> StoreClient::read_int(Clock::time_point deadline) {
  if (Status s = fill(sizeof(T), deadline); !s) return broken(s);
  codec::Reader in(in_);
  const T v = in.get<T>();  // fill() made sizeof(T) bytes present
  in_.erase(0, in.pos());
  return v;
}

Result<std::string> StoreClient::read_bytes(Clock::time_point deadline) {
  auto len = read_int<std::int64_t>(deadline);
  if (!len) return len.status();
  if (*len < 0 || *len > (std::int64_t{1} << 32)) {
    return broken(protocol_error("store replied with a length of " + std::to_string(*len)));
  }
  const auto n = static_cast<std::size_t>(*len);
  if (Status s = fill(n, deadline); !s) return broken(s);
  std::string v = in_.substr(0, n);
  in_.erase(0, n);
  return v;
}

Status StoreClient::wait_until(const std::vector<std::string>& keys, Clock::time_point deadline) {
  if (Status s = send({.op = Op::kWait, .keys = keys}, deadline); !s) return s;
  auto reply = read_u8(deadline);
  if (reply) {
    if (*reply != kStopWaiting) return broken(protocol_error("unexpected reply to WAIT"));
    return Status::ok();
  }
  if (reply.status().code() != ErrorCode::kTimeout || broken_) return broken(reply.status());
  // Cancel on the server; a STOP_WAITING that raced the cancel may arrive first.
  const auto grace = Clock::now() + std::chrono::seconds(5);
  if (Status s = send({.op = Op::kCancelWait}, grace); !s) return s;
  auto first = read_u8(grace);
  if (!first) return broken(first.status());
  if (*first == kStopWaiting) {
    auto second = read_u8(grace);
    if (!second) return broken(second.status());
    if (*second != kWaitCanceled) return broken(protocol_error("unexpected reply to CANCEL_WAIT"));
  } else if (*first != kWaitCanceled) {
    return broken(protocol_error("unexpected reply to CANCEL_WAIT"));
  }
  std::string names;
  for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
  return timeout_error("waited too long for store keys: " + names);
}

Status StoreClient::set(std::string_view key, std::string_view value, Duration timeout) {
  return send({.op = Op::kSet, .key = std::string(key), .value = std::string(value)},
              deadline(timeout));
}

Result<std::string> StoreClient::get(std::string_view key, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = wait_until({std::string(key)}, until); !s) return s;
  if (Status s = send({.op = Op::kGet, .key = std::string(key)}, until); !s) return s;
  return read_bytes(until);
}

Result<std::int64_t> StoreClient::add(std::string_view key, std::int64_t delta, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kAdd, .key = std::string(key), .delta = delta}, until); !s) {
    return s;
  }
  return read_int<std::int64_t>(until);
}

Result<std::string> StoreClient::compare_set(std::string_view key, std::string_view expected,
                                             std::string_view desired, Duration timeout) {
  const auto until = deadline(timeout);
  Request r{.op = Op::kCompareSet,
            .key = std::string(key),
            .value = std::string(expected),
            .desired = std::string(desired)};
  if (Status s = send(r, until); !s) return s;
  return read_bytes(until);
}

Result<bool> StoreClient::check(const std::vector<std::string>& keys, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kCheck, .keys = keys}, until); !s) return s;
  auto reply = read_u8(until);
  if (!reply) return broken(reply.status());
  return *reply == kCheckReady;
}

Status StoreClient::wait(const std::vector<std::string>& keys, Duration timeout) {
  return wait_until(keys, deadline(timeout));
}

Result<bool> StoreClient::delete_key(std::string_view key, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kDeleteKey, .key = std::string(key)}, until); !s) return s;
  auto n = read_int<std::int64_t>(until);
  if (!n) return n.status();
  return *n == 1;
}

Result<std::int64_t> StoreClient::num_keys(Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kGetNumKeys}, until); !s) return s;
  return read_int<std::int64_t>(until);
}

Status StoreClient::append(std::string_view key, std::string_view value, Duration timeout) {
  return send({.op = Op::kAppend, .key = std::string(key), .value = std::string(value)},
              deadline(timeout));
}

Result<std::vector<std::string>> StoreClient::multi_get(const std::vector<std::string>& keys,
                                                        Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = wait_until(keys, until); !s) return s;
  if (Status s = send({.op = Op::kMultiGet, .keys = keys}, until); !s) return s;
  std::vector<std::string> values;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto v = read_bytes(until);
    if (!v) return v.status();
    values.push_back(std::move(*v));
  }
  return values;
}

Status StoreClient::multi_set(const std::vector<std::string>& keys,
                              const std::vector<std::string>& values, Duration timeout) {
  if (keys.size() != values.size()) {
    return invalid_argument("multi_set needs as many values as keys");
  }
  return send({.op = Op::kMultiSet, .keys = keys, .values = values}, deadline(timeout));
}

Result<std::vector<std::string>> StoreClient::list_keys(Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kList}, until); !s) return s;
  auto n = read_int<std::int64_t>(until);
  if (!n) return n.status();
  std::vector<std::string> keys;
  for (std::int64_t i = 0; i < *n; ++i) {
    auto k = read_bytes(until);
    if (!k) return k.status();
    keys.push_back(std::move(*k));
  }
  return keys;
}

Result<std::chrono::nanoseconds> StoreClient::ping(Duration timeout) {
  const auto until = deadline(timeout);
  static thread_local std::minstd_rand rng{std::random_device{}()};
  const auto nonce = static_cast<std::uint32_t>(rng());
  const auto start = Clock::now();
  if (Status s = send({.op = Op::kPing, .word = nonce}, until); !s) return s;
  auto echo = read_int<std::uint32_t>(until);
  if (!echo) return echo.status();
  if (*echo != nonce) return broken(protocol_error("PING reply carries the wrong nonce"));
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
}

Status StoreClient::queue_push(std::string_view key, std::string_view value, Duration timeout) {
  return send({.op = Op::kQueuePush, .key = std::string(key), .value = std::string(value)},
              deadline(timeout));
}

Result<std::optional<std::string>> StoreClient::queue_pop(std::string_view key, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kQueuePop, .key = std::string(key)}, until); !s) return s;
  auto n = read_int<std::int64_t>(until);
  if (!n) return n.status();
  if (*n <= 0) return std::optional<std::string>();
  auto v = read_bytes(until);
  if (!v) return v.status();
  return std::optional<std::string>(std::move(*v));
}

Result<std::int64_t> StoreClient::queue_len(std::string_view key, Duration timeout) {
  const auto until = deadline(timeout);
  if (Status s = send({.op = Op::kQueueLen, .key = std::string(key)}, until); !s) return s;
  return read_int<std::int64_t>(until);
}

}  // namespace ddp::rendezvous
