// The coordinating agent's end of the presence signal (presence_wire.h, docs/etcd.md): a TCP
// listener the other agents of the job connect to and keep open for as long as their process
// lives. Each hello is first put to `check` (the coordinator compares its token with etcd's): a
// hello it refuses is logged ("refused the hello of node K: <why>") and its connection closed
// with a bye, and is never reported. After an accepted hello, `on_gone` gets the hello and how
// the connection ended:
//  - kClosed: it closed (EOF or reset) without a bye: the agent's process is gone (SIGKILL,
//    crash, OOM kill: the kernel closed its socket);
//  - kUnreachable (only with a silence timeout): the agent's machine left the beats this end
//    writes unacknowledged for `silence_timeout` (presence_tcp.h), or lost its route:
//    powered off or cut off. A frozen agent process is not reported (its kernel
//    still acknowledges): its lease decides.
// Bytes the agents send after their hello are beats, then a bye on a deliberate close.
//
// Limits (an unauthenticated port must not eat the agent's descriptors): a connection must
// complete its hello within `hello_deadline`, and at most `max_connections` are open; either
// way the connection is closed with a bye (so an agent never takes it for this process's
// death) and a warning is logged once. A failed accept (EMFILE and the like) is logged once
// and retried after a pause (100 ms, doubling up to 2 s), never in a busy loop.
// A listener failure is returned; it only loses the fast path.
// Threading: the agent's io_context thread. stop() closes everything; no callback follows.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "agent/presence_tcp.h"
#include "agent/presence_wire.h"
#include "common/status.h"

namespace ddp::agent {

class PresenceServer {
 public:
  // Ok: the hello is accepted; an error refuses it, its message saying why.
  using HelloCheck = std::function<boost::asio::awaitable<Status>(const PresenceHello&)>;
  using Gone = std::function<void(const PresenceHello&, PeerEnd)>;
  PresenceServer(boost::asio::io_context& io, HelloCheck check, Gone on_gone);
  ~PresenceServer();
  PresenceServer(const PresenceServer&) = delete;
  PresenceServer& operator=(const PresenceServer&) = delete;

  struct Limits {
    std::size_t max_connections = 1024;
    std::chrono::milliseconds hello_deadline = std::chrono::seconds(10);
    // 0: no beats and no silence check (a silent machine is left to its lease).
    std::chrono::milliseconds silence_timeout{0};
  };
  // Listens on `host` ("" = every interface), port 0, and accepts until stop(). kIo or
  // kAddressInUse naming the address.
  Status listen(const std::string& host, Limits limits);
  std::uint16_t port() const { return port_; }
  void stop();

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> beat_loop();
  void refuse(boost::asio::ip::tcp::socket& socket, const char* why);
  boost::asio::awaitable<void> serve(std::uint64_t id,
                                     std::shared_ptr<boost::asio::ip::tcp::socket> socket);

  boost::asio::io_context& io_;
  HelloCheck check_;
  Gone on_gone_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // after a failed accept
  boost::asio::steady_timer beat_timer_;
  std::uint16_t port_ = 0;
  Limits limits_;
  bool refusal_logged_ = false;
  bool accept_error_logged_ = false;
  bool arm_error_logged_ = false;
  std::uint64_t next_id_ = 0;
  struct Connection {
    std::shared_ptr<boost::asio::ip::tcp::socket> socket;
    SilenceWatch watch;
    bool silent = false;  // the watch's verdict: its read was cancelled for it
  };
  std::map<std::uint64_t, Connection> connections_;
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines in flight
};

}  // namespace ddp::agent
