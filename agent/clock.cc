#include "agent/clock.h"

namespace ddp::agent {

Clock::TimerId AsioClock::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  const TimerId id = next_++;
  auto timer = std::make_unique<boost::asio::steady_timer>(io_, delay);
  timer->async_wait([this, id, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (ec) return;
    timers_.erase(id);
    fn();
  });
  timers_[id] = std::move(timer);
  return id;
}

void AsioClock::cancel(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  it->second->cancel();
  timers_.erase(it);
}

}  // namespace ddp::agent
