// What the two ends of a presence connection (presence_server.h, presence_link.h) share at the
// TCP level: how a failed read is judged, and the check for a peer that went silent.
//
// A closed socket says its process died (the kernel closed it). A machine that loses power
// or its network closes nothing: its connections just stop answering. To notice that without
// mistaking a slow process for a dead one, each end writes a beat byte every `interval` and
// sets TCP_USER_TIMEOUT: when bytes stay unacknowledged by the peer's *kernel* for `timeout`,
// the kernel fails the connection (ETIMEDOUT). A frozen, stalled or starved agent process is
// not noticed (its kernel still acknowledges), by design: its lease decides.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
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

}  // namespace ddp::agent
