// What the two ends of a presence connection (presence_server.h, presence_link.h) share at the
// TCP level: how a failed read is judged, and the check for a peer that went silent.
//
// A closed socket says its process died (the kernel closed it). A machine that loses power
// or its network closes nothing: its connections just stop answering. To notice that without
// mistaking a slow process for a dead one, each end writes a beat byte every `interval` and
// judges only the peer's *kernel*: on each tick, before its beat, it asks its own kernel
// (TCP_INFO) whether bytes it sent are still unacknowledged, and since when it has had
// unacknowledged bytes; that lasting `timeout` is the verdict. TCP_USER_TIMEOUT, set to the
// same timeout, is the backstop (the kernel counts it from its first retransmission, which
// makes it fire about an RTO, ~0.2-0.5 s, later). A frozen, stalled or starved agent process
// is never judged silent: its kernel still acknowledges. The check is what the beats are for;
// it rides on their timer rather than polling anything.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <optional>
#include <string_view>

#include "common/status.h"

namespace ddp::agent {

// What a failed read on an established presence connection says about the peer.
enum class PeerEnd {
  kClosed,       // EOF or reset: the peer's process is gone, its kernel closed the socket
  kUnreachable,  // no acknowledgement within the timeout, or no route: machine or network gone
  kUnknown,      // cancelled, or a local failure: nothing about the peer
};
PeerEnd judge_read_error(const boost::system::error_code& ec);

// The beat byte: after its hello a connection carries beats, then possibly a bye (whose
// first byte is not a beat).
inline constexpr char kBeat = '.';

// How often an end beats for `timeout`: a quarter of it, at least 50 ms.
std::chrono::milliseconds beat_interval(std::chrono::milliseconds timeout);

// True when `bytes`, read after a hello, hold more than beats: the peer's bye has begun.
bool holds_bye(std::string_view bytes);

// Makes a connected socket non-blocking (so a beat never waits), then sets TCP_USER_TIMEOUT
// to `timeout`. kIo naming the failure (the connection still works, without the check).
Status arm_silence_check(boost::asio::ip::tcp::socket& socket, std::chrono::milliseconds timeout);

// Writes one beat if the send buffer takes it now; never blocks, never fails (a dead peer is
// reported by the read side).
void send_beat(boost::asio::ip::tcp::socket& socket);

// The silence check of one connection, driven by its end's beat timer.
class SilenceWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SilenceWatch(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  // One tick: true when bytes this end sent have stayed unacknowledged for the timeout (the
  // peer's machine or network is gone); otherwise sends a beat and returns false.
  bool tick(boost::asio::ip::tcp::socket& socket, Clock::time_point now);

 private:
  std::chrono::milliseconds timeout_;
  std::optional<Clock::time_point> unacked_since_;  // the oldest beat still unacknowledged
};

}  // namespace ddp::agent
