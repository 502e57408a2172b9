#include "proc/signal_router.h"

#include <spdlog/spdlog.h>

#include "common/signal_name.h"

namespace ddp::proc {

SignalRouter::SignalRouter(boost::asio::io_context& io) : set_(io) {}

void SignalRouter::route(const std::vector<int>& signals, std::function<void(int)> handler) {
  const bool waiting = static_cast<bool>(handler_);
  handler_ = std::move(handler);
  for (int sig : signals) {
    boost::system::error_code ec;
    set_.add(sig, ec);
    if (ec) spdlog::warn("cannot handle {}: {}", signal_name(sig), ec.message());
  }
  if (!waiting) wait();
}

void SignalRouter::cancel() {
  cancelled_ = true;
  boost::system::error_code ignored;
  set_.cancel(ignored);
}

void SignalRouter::wait() {
  set_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec || cancelled_) return;
    handler_(sig);
    if (!cancelled_) wait();
  });
}

}  // namespace ddp::proc
