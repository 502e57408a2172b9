// The connection limits a session enforces itself (the caps are the accept loop's, server.cc):
// the deadline for the first complete request and --store-allow; and the rate-limited log line
// of every refusal. Split from session.cc, which owns the socket.
#include <spdlog/spdlog.h>

#include <chrono>

#include "rendezvous/session.h"

namespace ddp::rendezvous {

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

}  // namespace

void SessionContext::note_refusal(Refusal why, const boost::asio::ip::address& peer) {
  const std::string who = normalize_peer(peer).to_string();
  const auto count = refusals.record(why, std::chrono::steady_clock::now());
  if (!count) return;
  const std::string times =
      *count == 1 ? ""
                  : " (" + std::to_string(*count) + " refusals of this kind since the last line)";
  switch (why) {
    case Refusal::kTotalFull:
      spdlog::warn(
          "refused a connection from {}: {} connections are open, the cap (--max-connections)"
          "{}",
          who, admission.total(), times);
      break;
    case Refusal::kPeerFull:
      spdlog::warn(
          "refused a connection from {}: it holds {} connections, the cap "
          "(--max-connections-per-peer){}",
          who, admission.count(peer), times);
      break;
    case Refusal::kDescriptors:
      spdlog::warn(
          "refused a connection from {}: the process is out of file descriptors; raise the "
          "open-file limit (ulimit -n) or lower --max-connections{}",
          who, times);
      break;
    case Refusal::kFirstRequestTimeout:
      spdlog::warn(
          "closed a connection from {}: no complete request within {} of connecting "
          "(--first-request-timeout){}",
          who, seconds_text(connections.first_request_timeout), times);
      break;
    case Refusal::kStoreNotAllowed:
      spdlog::warn(
          "closed a connection from {}: TCPStore operations are allowed from {} only "
          "(--store-allow){}",
          who, connections.store_allow.to_string(), times);
      break;
    case Refusal::kCount:
      break;
  }
}

void Session::start_first_request_deadline() {
  const auto timeout = ctx_->connections.first_request_timeout;
  if (timeout <= std::chrono::milliseconds::zero()) return;
  first_request_timer_ =
      std::make_unique<boost::asio::steady_timer>(socket_.get_executor(), timeout);
  first_request_timer_->async_wait(
      [weak = std::weak_ptr<Session>(shared_from_this())](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->closed_ || !self->first_request_timer_) return;
        self->first_request_timer_.reset();
        // Silent: a 1.13 client's watch connection looks exactly like this. Kept, like an
        // idle connection after its first request; the caps bound what they hold.
        if (!self->heard_) return;
        self->ctx_->note_refusal(Refusal::kFirstRequestTimeout, self->peer_.address());
        self->close("no complete request before the first-request deadline", false);
      });
}

void Session::first_request_done() {
  if (first_request_timer_) first_request_timer_.reset();  // cancels the pending wait
}

bool Session::store_query_allowed(Op op) {
  if (store_allowed_) return true;
  // These touch no key: a >= 2.2 client's handshake and the agents' liveness probe.
  if (op == Op::kValidate || op == Op::kPing || op == Op::kCancelWait) return true;
  ctx_->note_refusal(Refusal::kStoreNotAllowed, peer_.address());
  close("TCPStore operation from outside --store-allow", false);
  return false;
}

}  // namespace ddp::rendezvous
