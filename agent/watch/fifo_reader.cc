#include "agent/watch/fifo_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proc/pipe_drain.h"

namespace ddp::agent {

Result<std::unique_ptr<FifoReader>> FifoReader::open(boost::asio::io_context& io,
                                                     std::filesystem::path path,
                                                     const std::string& what, OnBytes on_bytes) {
  ::unlink(path.c_str());
  if (::mkfifo(path.c_str(), 0600) != 0) {
    return io_error("cannot create the " + what + " " + path.string() + ": " +
                    std::strerror(errno));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    Status s =
        io_error("cannot open the " + what + " " + path.string() + ": " + std::strerror(errno));
    ::unlink(path.c_str());
    return s;
  }
  return std::make_unique<FifoReader>(io, fd, std::move(path), std::move(on_bytes));
}

FifoReader::FifoReader(boost::asio::io_context& io, int fd, std::filesystem::path path,
                       OnBytes on_bytes)
    : fifo_(io, fd), path_(std::move(path)), on_bytes_(std::move(on_bytes)) {
  wait();
}

FifoReader::~FifoReader() {
  boost::system::error_code ignored;
  fifo_.close(ignored);
  ::unlink(path_.c_str());
}

void FifoReader::read_pending() {
  auto alive = life_.watch();
  proc::drain_pipe(fifo_.native_handle(), [&](std::string_view b) {
    on_bytes_(b);
    return static_cast<bool>(alive);
  });
}

void FifoReader::wait() {
  fifo_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [this, alive = life_.watch()](const boost::system::error_code& ec) {
                     if (ec || !alive) return;
                     // on_bytes_ may destroy this reader: stop reading the moment it does.
                     auto state = proc::drain_pipe(fifo_.native_handle(), [&](std::string_view b) {
                       on_bytes_(b);
                       return static_cast<bool>(alive);
                     });
                     if (alive && state == proc::PipeState::kOpen) wait();
                   });
}

}  // namespace ddp::agent
