// An agent's end of the presence signal (presence_wire.h, docs/etcd.md): one TCP connection
// to the coordinating agent's presence listener, opened with a hello. It reports `on_gone`
// once, with how the coordinator's end was lost:
//  - kClosed: it closed (EOF or reset) without a bye: that process is gone;
//  - kUnreachable (only with a silence timeout): the coordinator's machine left the beats
//    this link writes unacknowledged for `silence_timeout` (presence_tcp.h), or the route to
//    it is gone: powered off or cut off.
// Bytes from the coordinator are beats, or its bye. A coordinator that cannot be reached (no
// route, refused, no answer within the connect deadline) is reported to `on_unreachable` once;
// the link then does nothing more and the coordinator's lease alone decides (the job never
// stops for this).
//
// close() sends the bye and closes: the coordinator takes that as orderly, even when it reads
// it late (it was frozen and deposed meanwhile). No callback follows close(). A bye from the
// coordinator (it exits, or refused the hello) ends the link quietly.
// Threading: the agent's io_context thread; the link keeps itself alive while its connection
// coroutine runs.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "agent/presence_tcp.h"
#include "common/status.h"
#include "etcd/endpoints.h"

namespace ddp::agent {

class PresenceLink : public std::enable_shared_from_this<PresenceLink> {
 public:
  struct Timing {
    std::chrono::milliseconds connect_deadline{2000};
    std::chrono::milliseconds silence_timeout{0};  // 0: no beats, no silence check
  };
  static std::shared_ptr<PresenceLink> open(boost::asio::any_io_executor ex, etcd::Endpoint peer,
                                            std::string hello, Timing timing,
                                            std::function<void(PeerEnd)> on_gone,
                                            std::function<void(Status)> on_unreachable);
  PresenceLink(boost::asio::any_io_executor ex, etcd::Endpoint peer, std::string hello);
  PresenceLink(const PresenceLink&) = delete;
  PresenceLink& operator=(const PresenceLink&) = delete;

  // Bye (a short blocking write is fine: it is 4 bytes into an open socket's send buffer),
  // then close. Safe on a link that never connected or whose io_context has stopped.
  void close();

 private:
  boost::asio::awaitable<void> run(Timing timing);
  boost::asio::awaitable<void> beat(std::chrono::milliseconds timeout);

  etcd::Endpoint peer_;
  std::string hello_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  std::function<void(PeerEnd)> on_gone_;
  std::function<void(Status)> on_unreachable_;
  bool connected_ = false;
  bool closed_ = false;
  bool silent_ = false;  // the silence watch's verdict: the read was cancelled for it
};

}  // namespace ddp::agent
