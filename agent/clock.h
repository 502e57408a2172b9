// The agent policy's time: one-shot timers on the agent's io_context (AsioClock), or a clock a
// test advances by hand (tests/agent/fake_mechanisms.h).
//
// Threading: the io_context's thread only; a timer's callback runs there, never inside after().
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

namespace ddp::agent {

class Clock {
 public:
  using TimerId = std::uint64_t;
  virtual ~Clock() = default;
  // Runs `fn` once, `delay` from now, unless cancelled first.
  virtual TimerId after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // A timer that already ran or was cancelled is ignored.
  virtual void cancel(TimerId id) = 0;
};

class AsioClock final : public Clock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}
  TimerId after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  void cancel(TimerId id) override;

 private:
  boost::asio::io_context& io_;
  std::map<TimerId, std::unique_ptr<boost::asio::steady_timer>> timers_;
  TimerId next_ = 1;
};

}  // namespace ddp::agent
