#include "agent/membership/join_progress.h"

#include <spdlog/spdlog.h>

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kFirstQuestion = 2s;
constexpr auto kPeriod = 10s;

double seconds(rendezvous::membership::Duration d) {
  return std::chrono::duration_cast<std::chrono::duration<double>>(d).count();
}

}  // namespace

JoinProgress::JoinProgress(boost::asio::io_context& io, std::function<void()> ask)
    : timer_(io), ask_(std::move(ask)) {}

void JoinProgress::start() { ask_after(kFirstQuestion); }

void JoinProgress::stop() { timer_.cancel(); }

void JoinProgress::ask_after(std::chrono::seconds delay) {
  timer_.expires_after(delay);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    ask_();
    ask_after(kPeriod);
  });
}

void JoinProgress::report(const rendezvous::membership::Waiting& w) {
  if (w.last_call_left) {
    spdlog::info(
        "waiting for the other nodes: {} of {}..{} joined; the round forms in {:.1f} s "
        "(or at once when {} have joined)",
        w.joined, w.min_nodes, w.max_nodes, seconds(*w.last_call_left), w.max_nodes);
    return;
  }
  spdlog::info(
      "waiting for the other nodes: {} of {} joined; {:.0f} s left before the join timeout "
      "(--rdzv-conf join_timeout)",
      w.joined, w.min_nodes, seconds(w.join_timeout_left));
}

}  // namespace ddp::agent
