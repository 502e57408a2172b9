#include "agent/membership/daemon_connect.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kFirstPause{50};
constexpr milliseconds kMaxPause{1000};

// The problem part of a "problem; fix" message: the fix a lower layer suggests (e.g. "check
// --rdzv-endpoint") may not be the option this user passed, so the caller names its own.
std::string problem_of(const Status& s) {
  const std::string& m = s.message();
  return m.substr(0, m.find("; "));
}

class Retry : public std::enable_shared_from_this<Retry> {
 public:
  Retry(asio::io_context& io, rendezvous::RdzvClientHandlers handlers, DaemonEndpoint endpoint,
        std::function<void(Result<std::shared_ptr<rendezvous::RdzvClient>>)> done)
      : io_(io),
        handlers_(std::move(handlers)),
        endpoint_(std::move(endpoint)),
        done_(std::move(done)),
        deadline_(Clock::now() + endpoint_.retry_for),
        pause_timer_(io) {}

  void attempt() {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - Clock::now());
    const milliseconds timeout = endpoint_.retry_for.count() == 0
                                     ? endpoint_.attempt_timeout
                                     : std::clamp(left, milliseconds(1), endpoint_.attempt_timeout);
    auto client = rendezvous::RdzvClient::create(io_, handlers_);
    client->connect(endpoint_.host, endpoint_.port, timeout,
                    [self = shared_from_this(), client](Status s) {
                      if (s) return self->done_(client);
                      self->failed(std::move(s));
                    });
  }

 private:
  void failed(Status s) {
    if (endpoint_.retry_for.count() == 0) return done_(s);
    if (Clock::now() + pause_ >= deadline_) {
      return done_(timeout_error("cannot reach the rendezvous at " + endpoint_.host + ":" +
                                 std::to_string(endpoint_.port) + " for " +
                                 std::to_string(endpoint_.retry_for.count()) +
                                 "ms (last attempt: " + problem_of(s) + ")"));
    }
    if (!announced_) {
      announced_ = true;
      spdlog::info("the rendezvous at {}:{} is not reachable yet ({}); retrying for up to {}ms",
                   endpoint_.host, endpoint_.port, problem_of(s), endpoint_.retry_for.count());
    }
    // A pause between attempts: nothing signals that a remote port started listening.
    pause_timer_.expires_after(pause_);
    pause_ = std::min(pause_ * 2, kMaxPause);
    pause_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->attempt();
    });
  }

  asio::io_context& io_;
  rendezvous::RdzvClientHandlers handlers_;
  DaemonEndpoint endpoint_;
  std::function<void(Result<std::shared_ptr<rendezvous::RdzvClient>>)> done_;
  Clock::time_point deadline_;
  asio::steady_timer pause_timer_;
  milliseconds pause_ = kFirstPause;
  bool announced_ = false;
};

}  // namespace

void connect_daemon(asio::io_context& io, rendezvous::RdzvClientHandlers handlers,
                    DaemonEndpoint endpoint,
                    std::function<void(Result<std::shared_ptr<rendezvous::RdzvClient>>)> done) {
  auto retry =
      std::make_shared<Retry>(io, std::move(handlers), std::move(endpoint), std::move(done));
  retry->attempt();
}

}  // namespace ddp::agent
