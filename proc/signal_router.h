// The process's one owner of the signals it handles (SIGTERM, SIGINT, SIGHUP, ...): the agent,
// the fan-out launcher and the rendezvous daemon each make one router and route the signals
// they handle to one handler. Child exits are not signals here: proc::Spawner owns them.
//
// A signal that cannot be handled (e.g. SIGKILL) is logged once and skipped. Delivery is on the
// io_context's thread, once per received signal, until cancel() or destruction.
//
// Threading: the io_context's single thread. One router per process at a time (Asio's
// signal_set allows more, but two owners of one signal would both act on it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>
#include <vector>

namespace ddp::proc {

class SignalRouter {
 public:
  explicit SignalRouter(boost::asio::io_context& io);
  SignalRouter(const SignalRouter&) = delete;
  SignalRouter& operator=(const SignalRouter&) = delete;

  // Handles `signals` from now on, calling `handler(signal)` for each one received.
  // Call once; a second call replaces the handler and adds the signals.
  void route(const std::vector<int>& signals, std::function<void(int)> handler);
  // Stops delivering (the signals stay caught, so they no longer kill the process).
  void cancel();

 private:
  void wait();

  boost::asio::signal_set set_;
  std::function<void(int)> handler_;
  bool cancelled_ = false;
};

}  // namespace ddp::proc
