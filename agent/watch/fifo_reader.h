// A named pipe (FIFO) the agent creates and reads: the channels workers write to by path (the
// heartbeat channel, the Python stack channel, torchrun's timer file). The agent opens it for
// reading and writing, so a writer may open it at any time (it never blocks and never gets
// ENXIO while the agent lives) and the agent never reads EOF when writers close. The FIFO is
// removed when the reader is destroyed.
//
// Threading: the io_context's thread; on_bytes runs there, in order, until destruction (it may
// destroy the reader).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>

#include "common/lifetime.h"
#include "common/status.h"

namespace ddp::agent {

class FifoReader {
 public:
  using OnBytes = std::function<void(std::string_view bytes)>;
  // Creates the FIFO at `path` (mode 0600, replacing what is there) and reads it. `what` names
  // it in errors ("heartbeat channel"). Errors: kIo naming the path and the reason.
  static Result<std::unique_ptr<FifoReader>> open(boost::asio::io_context& io,
                                                  std::filesystem::path path,
                                                  const std::string& what, OnBytes on_bytes);
  ~FifoReader();
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Hands on_bytes what the FIFO holds now, without waiting (e.g. the last beats of a worker
  // that exited before the loop read them).
  void read_pending();

  FifoReader(boost::asio::io_context& io, int fd, std::filesystem::path path, OnBytes on_bytes);

 private:
  void wait();

  boost::asio::posix::stream_descriptor fifo_;
  std::filesystem::path path_;
  OnBytes on_bytes_;
  Lifetime life_;  // last: handlers queued when this dies touch nothing
};

}  // namespace ddp::agent
