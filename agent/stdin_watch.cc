#include "agent/stdin_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

namespace ddp::agent {

namespace asio = boost::asio;

StdinWatch::StdinWatch(asio::io_context& io) : in_(io) {}

void StdinWatch::start(std::function<void(const std::string& why)> on_closed) {
  on_closed_ = std::move(on_closed);
  int fd = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) {
    std::string why = std::string("stdin: ") + std::strerror(errno);
    asio::post(in_.get_executor(), life_.guard([this, why] {
      if (on_closed_) on_closed_(why);
    }));
    return;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  boost::system::error_code ec;
  in_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    std::string why = "stdin cannot be watched: " + ec.message();
    asio::post(in_.get_executor(), life_.guard([this, why] {
      if (on_closed_) on_closed_(why);
    }));
    return;
  }
  wait();
}

void StdinWatch::cancel() {
  on_closed_ = nullptr;
  boost::system::error_code ignored;
  in_.close(ignored);
}

void StdinWatch::wait() {
  in_.async_wait(asio::posix::stream_descriptor::wait_read,
                 life_.guard([this](const boost::system::error_code& ec) {
                   if (ec == asio::error::operation_aborted || !on_closed_) return;
                   std::string why = ec ? "stdin: " + ec.message() : "";
                   while (why.empty()) {
                     std::array<char, 4096> buffer;
                     ssize_t n = ::read(in_.native_handle(), buffer.data(), buffer.size());
                     if (n > 0) continue;  // discarded
                     if (n < 0 && errno == EINTR) continue;
                     if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wait();
                     why = n == 0 ? "EOF on stdin" : std::string("stdin: ") + std::strerror(errno);
                   }
                   auto callback = std::move(on_closed_);
                   on_closed_ = nullptr;
                   callback(why);
                 }));
}

}  // namespace ddp::agent
