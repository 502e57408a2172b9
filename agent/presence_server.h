// The coordinating agent's end of the presence signal (presence_wire.h, docs/etcd.md): a TCP
// listener the other agents of the job connect to and keep open for as long as their process
// lives. Each hello is first put to `check` (the coordinator compares its token with etcd's): a
// hello it refuses is logged ("refused the hello of node K: <why>") and its connection closed
// with a bye, and is never reported. A connection that closes (EOF or reset) after an accepted
// hello and without a bye is an agent process gone (SIGKILL, crash, OOM kill: the kernel
// closed its socket): `on_gone` gets its hello. A frozen or partitioned agent keeps its connection
// silent: nothing is reported, its lease decides. Nothing is written to the agents but a bye before
// a deliberate close (a hello it cannot accept, stop()), so no timeout can break a connection.
//
// Limits (an unauthenticated port must not eat the agent's descriptors): a connection must
// complete its hello within `hello_deadline`, and at most `max_connections` are open; either
// way the connection is closed with a bye (so an agent never takes it for this process's
// death) and a warning is logged once.
// A listener or accept failure is returned or logged once; it only loses the fast path.
// Threading: the agent's io_context thread. stop() closes everything; no callback follows.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "agent/presence_wire.h"
#include "common/status.h"

namespace ddp::agent {

class PresenceServer {
 public:
  // Ok: the hello is accepted; an error refuses it, its message saying why.
  using HelloCheck = std::function<boost::asio::awaitable<Status>(const PresenceHello&)>;
  PresenceServer(boost::asio::io_context& io, HelloCheck check,
                 std::function<void(const PresenceHello&)> on_gone);
  ~PresenceServer();
  PresenceServer(const PresenceServer&) = delete;
  PresenceServer& operator=(const PresenceServer&) = delete;

  struct Limits {
    std::size_t max_connections = 1024;
    std::chrono::milliseconds hello_deadline = std::chrono::seconds(10);
  };
  // Listens on `host` ("" = every interface), port 0, and accepts until stop(). kIo or
  // kAddressInUse naming the address.
  Status listen(const std::string& host, Limits limits);
  std::uint16_t port() const { return port_; }
  void stop();

 private:
  boost::asio::awaitable<void> accept_loop();
  void refuse(boost::asio::ip::tcp::socket& socket, const char* why);
  boost::asio::awaitable<void> serve(std::uint64_t id,
                                     std::shared_ptr<boost::asio::ip::tcp::socket> socket);

  boost::asio::io_context& io_;
  HelloCheck check_;
  std::function<void(const PresenceHello&)> on_gone_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  Limits limits_;
  bool refusal_logged_ = false;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, std::shared_ptr<boost::asio::ip::tcp::socket>> connections_;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines in flight
};

}  // namespace ddp::agent
