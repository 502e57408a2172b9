// Driving coroutines and watches from a test's thread: one io_context, run until a result or
// a predicate holds, each with a deadline; plain etcd writes for setting up a test.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "etcd/client.h"

namespace ddp::testing {

template <typename T>
T await(boost::asio::io_context& io, boost::asio::awaitable<T> a,
        std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  std::optional<T> out;
  std::exception_ptr failure;
  boost::asio::co_spawn(
      io,
      [&, a = std::move(a)]() mutable -> boost::asio::awaitable<void> {
        out.emplace(co_await std::move(a));
      },
      [&](std::exception_ptr e) {
        if (e) failure = e;
      });
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!out && !failure) {
    if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("await: timed out");
    if (io.stopped()) io.restart();
    io.run_one_for(std::chrono::milliseconds(100));
  }
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

// Runs the io_context until pred() holds; false at the deadline.
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& pred,
                      std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(std::chrono::milliseconds(50));
  }
  return true;
}

// A put through a txn (the product writes only in txns): the revision it made.
inline Result<std::int64_t> put(boost::asio::io_context& io, etcd::Client& c,
                                const std::string& key, const std::string& value,
                                std::int64_t lease = 0) {
  auto done = await(
      io, c.txn({.compare = {}, .success = {etcd::op_put(key, value, lease)}, .failure = {}}));
  if (!done) return done.status();
  return done->revision;
}

inline Status remove(boost::asio::io_context& io, etcd::Client& c, const std::string& key) {
  return await(io, c.call("/v3/kv/deleterange", etcd::Json{{"key", etcd::base64_encode(key)}}))
      .status();
}

}  // namespace ddp::testing
