// What the presence tests share: hellos, an accept-all check, and waits with a deadline on
// loopback sockets driven by one io_context.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "agent/presence_wire.h"
#include "common/status.h"

namespace ddp::agent::presence_fixture {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

inline const std::string kToken = "0123456789abcdef0123456789abcdef";  // 128 bits
inline const std::string kOther = "fedcba9876543210fedcba9876543210";

inline PresenceHello hello_of(std::string node_key, std::int64_t lease,
                              std::string token = kToken) {
  return {"j", std::move(node_key), lease, std::move(token)};
}

// A check that accepts every hello (the server's own behaviour, without etcd).
inline asio::awaitable<Status> accept_all(const PresenceHello&) { co_return Status::ok(); }

// Runs `io` until `done()` or 5 s passed (a deadline, not a pause).
template <typename Pred>
inline bool run_until(asio::io_context& io, Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_one_for(50ms);
  }
  return done();
}

// Accepts the link's connection on `socket` and reads its hello (up to the end mark).
inline std::string accept_hello(asio::io_context& io, tcp::acceptor& acceptor,
                                tcp::socket& socket) {
  bool in = false, read = false;
  acceptor.async_accept(socket, [&](boost::system::error_code) { in = true; });
  REQUIRE(run_until(io, [&] { return in; }));
  std::string got;
  asio::async_read_until(socket, asio::dynamic_buffer(got), std::string(kHelloEnd),
                         [&](boost::system::error_code, std::size_t) { read = true; });
  REQUIRE(run_until(io, [&] { return read; }));
  return got;
}

// Reads until the server closes `socket`; what it sent.
inline std::string read_to_close(asio::io_context& io, tcp::socket& socket) {
  std::string answer;
  bool answered = false;
  asio::async_read(socket, asio::dynamic_buffer(answer),
                   [&](boost::system::error_code, std::size_t) { answered = true; });
  REQUIRE(run_until(io, [&] { return answered; }));
  return answer;
}

}  // namespace ddp::agent::presence_fixture
