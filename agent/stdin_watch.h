// Watches this process's stdin for EOF or an error, for agents a launching ddprun started over
// ssh (--exit-on-stdin-eof): sshd closes the remote command's stdin when the session ends (the
// launcher closed it to stop the job, the ssh client died, the connection broke), so EOF means
// "nobody is listening any more: stop". Bytes read from stdin are discarded.
//
// Threading: the io_context's single thread; the callback runs there, at most once.
// Owns a duplicate of fd 0 (set non-blocking) and closes it on destruction.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <string>

#include "common/lifetime.h"

namespace ddp::agent {

class StdinWatch {
 public:
  explicit StdinWatch(boost::asio::io_context& io);
  StdinWatch(const StdinWatch&) = delete;
  StdinWatch& operator=(const StdinWatch&) = delete;

  // Starts watching. `on_closed(why)` runs once, with "EOF" or the error, when stdin ends;
  // stdin that cannot be watched (closed, not pollable) counts as ended.
  void start(std::function<void(const std::string& why)> on_closed);
  void cancel();

 private:
  void wait();

  boost::asio::posix::stream_descriptor in_;
  std::function<void(const std::string&)> on_closed_;
  Lifetime life_;  // last: handlers queued when this dies touch nothing
};

}  // namespace ddp::agent
