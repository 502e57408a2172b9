#include "agent/presence_tcp.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <cerrno>
#include <cstring>
#include <string>

namespace ddp::agent {

namespace asio = boost::asio;

PeerEnd judge_read_error(const boost::system::error_code& ec) {
  if (ec == asio::error::eof || ec == asio::error::connection_reset) return PeerEnd::kClosed;
  if (ec == asio::error::timed_out || ec == asio::error::host_unreachable ||
      ec == asio::error::network_unreachable) {
    return PeerEnd::kUnreachable;
  }
  return PeerEnd::kUnknown;
}

std::chrono::milliseconds beat_interval(std::chrono::milliseconds timeout) {
  return std::max(timeout / 4, std::chrono::milliseconds(50));
}

Status arm_silence_check(asio::ip::tcp::socket& socket, std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  if (ec) return io_error("presence connection: cannot make it non-blocking: " + ec.message());
  const unsigned int ms = static_cast<unsigned int>(timeout.count());
  if (::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0) {
    return io_error(std::string("presence connection: cannot set TCP_USER_TIMEOUT: ") +
                    std::strerror(errno));
  }
  return Status::ok();
}

bool holds_bye(std::string_view bytes) {
  return bytes.find_first_not_of(kBeat) != std::string_view::npos;
}

void send_beat(asio::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.write_some(asio::buffer(&kBeat, 1), ignored);
}

}  // namespace ddp::agent

namespace ddp::agent {
namespace {

// Segments this end sent that the peer has not acknowledged; none known on failure.
std::optional<unsigned> unacknowledged(boost::asio::ip::tcp::socket& socket) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
    return std::nullopt;
  }
  return info.tcpi_unacked;
}

}  // namespace

bool SilenceWatch::tick(boost::asio::ip::tcp::socket& socket, Clock::time_point now) {
  const auto unacked = unacknowledged(socket);
  if (!unacked || *unacked == 0) {
    unacked_since_.reset();
  } else if (unacked_since_ && now - *unacked_since_ >= timeout_) {
    return true;
  }
  send_beat(socket);
  if (!unacked_since_) unacked_since_ = now;
  return false;
}

}  // namespace ddp::agent
