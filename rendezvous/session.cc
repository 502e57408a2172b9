#include "rendezvous/session.h"

#include <spdlog/spdlog.h>

#include <boost/asio/write.hpp>
#include <sstream>
#include <utility>

#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
// Reply buffer kept by a connection between replies; larger ones are released.
constexpr std::size_t kKeptReplyCapacity = 256;
}  // namespace

void Session::start(std::shared_ptr<SessionContext> ctx, tcp::socket socket,
                    const tcp::endpoint& peer, Admission::Ticket ticket) {
  auto session =
      std::make_shared<Session>(std::move(ctx), std::move(socket), peer, std::move(ticket));
  session->start_first_request_deadline();
  session->arm();
}

Session::Session(std::shared_ptr<SessionContext> ctx, tcp::socket socket, const tcp::endpoint& peer,
                 Admission::Ticket ticket)
    : ctx_(std::move(ctx)),
      socket_(std::move(socket)),
      peer_(peer),
      framer_(ctx_->limits),
      store_allowed_(ctx_->connections.store_allow.empty() ||
                     ctx_->connections.store_allow.contains(peer.address())),
      ticket_(std::move(ticket)) {
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
  ctx_->live.insert(this);
}

Session::~Session() {
  if (!closed_) {
    ctx_->store.drop(*this);
    ctx_->live.erase(this);
    if (node_id_) ctx_->native.closed(*node_id_);
  }
}

std::string Session::peer() const {
  std::ostringstream s;
  s << peer_;
  return s.str();
}

void Session::close(std::string_view reason, bool error) {
  if (closed_) return;
  closed_ = true;
  if (error) {
    spdlog::warn("closing connection from {}: {}", peer(), reason);
  } else {
    spdlog::debug("connection from {} closed: {}", peer(), reason);
  }
  ctx_->store.drop(*this);
  ctx_->live.erase(this);
  boost::system::error_code ignored;
  // The node is gone at once; the hub forgets this peer before it pushes to the others.
  if (node_id_) ctx_->native.closed(*node_id_);
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  first_request_timer_.reset();
  ticket_.reset();  // the descriptor is closed: the slot is free now
}

void Session::arm() {
  socket_.async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) { self->on_readable(ec); });
}

void Session::on_readable(boost::system::error_code ec) {
  // Drain what the kernel holds right now into the shared scratch buffer; nothing else
  // runs between this read and consume(), so sharing the buffer is safe.
  // At most a few buffers per wake-up, so one flooding client cannot starve the others:
  // the socket stays readable and the next wait completes at once, after other handlers.
  constexpr int kMaxReadsPerWakeup = 8;
  for (int reads = 0; !ec && !closed_; ++reads) {
    if (reads == kMaxReadsPerWakeup) {
      arm();
      return;
    }
    auto& scratch = ctx_->scratch;
    const std::size_t n = socket_.read_some(asio::buffer(scratch), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      arm();
      return;
    }
    if (ec) break;
    if (!consume(std::string_view(scratch.data(), n))) return;
    if (n < scratch.size()) {
      arm();
      return;
    }
  }
  if (ec == asio::error::eof) {
    close(in_.empty() ? "peer closed" : "peer closed in the middle of a request", false);
  } else if (ec && ec != asio::error::operation_aborted) {
    close(ec.message(), false);
  } else {
    close("stopped", false);
  }
}

bool Session::consume(std::string_view data) {
  heard_ = true;
  if (in_.empty()) {
    auto used = handle_all(data);
    if (!used) return false;
    in_.assign(data.substr(*used));
  } else {
    in_.append(data);
    if (in_.size() < needed_) return true;
    auto used = handle_all(in_);
    if (!used) return false;
    in_.erase(0, *used);
    if (in_.empty()) std::string().swap(in_);  // idle connections own no buffer
  }
  flush();
  return !closed_;
}

std::optional<std::size_t> Session::handle_all(std::string_view view) {
  std::size_t used = 0;
  needed_ = 0;
  while (used < view.size() && !closed_) {
    Frame frame = framer_.next(view.substr(used));
    switch (frame.kind) {
      case FrameKind::kIncomplete:
        needed_ = frame.needed;
        return used;
      case FrameKind::kError:
        close(frame.error, true);
        return std::nullopt;
      case FrameKind::kRefused:
        // Told to the agent (its join ends with it), then closed: what follows is unframable.
        push(rendezvous::membership::encode_legacy_error(ErrorCode::kProtocol, frame.error));
        close(frame.error, true);
        return std::nullopt;
      case FrameKind::kHello:
        used += frame.consumed;
        first_request_done();
        if (!answer_hello()) return std::nullopt;
        break;
      case FrameKind::kStore:
        used += frame.consumed;
        first_request_done();
        if (!store_query_allowed(frame.store.op)) return std::nullopt;
        if (!handle_store(frame.store)) return std::nullopt;
        break;
      case FrameKind::kNative:
        used += frame.consumed;
        first_request_done();
        handle_native(std::move(frame.native));
        break;
      case FrameKind::kAuthHello:
      case FrameKind::kAuthFrame:
        used += frame.consumed;
        handle_auth(frame);
        break;
    }
  }
  if (closed_) return std::nullopt;
  return used;
}

bool Session::handle_store(Request& request) {
  if (!framer_.native_mode()) return handle(request);
  // Native mode: the query's reply becomes one framed reply. It is collected apart from out_
  // because the query may also complete this connection's own parked WAIT (a pipelined
  // WAIT k, SET k), whose framed reply must come first: it was asked first.
  if (request.op == Op::kWatchKey) {
    close(
        "WATCH_KEY cannot share a connection with native rendezvous requests; use another "
        "connection for watches",
        true);
    return false;
  }
  if (node_id_) ctx_->native.touch(*node_id_);
  std::string queued;
  queued.swap(out_);
  in_store_query_ = true;
  const bool ok = handle(request);
  in_store_query_ = false;
  std::string reply;
  reply.swap(out_);
  out_.swap(queued);
  out_.append(deferred_);
  std::string().swap(deferred_);
  if (!ok) return false;
  const bool parked = (request.op == Op::kWait || request.op == Op::kBarrier) && reply.empty();
  // a parked one is answered by wait_satisfied
  if (!parked) put_store_reply(out_, reply);
  return true;
}

bool Session::become_native() {
  if (watching_) {
    close(
        "native rendezvous requests cannot share a connection with WATCH_KEY; use another "
        "connection for watches",
        true);
    return false;
  }
  if (!node_id_) {
    node_id_ = ctx_->native.attach(*this);
    spdlog::debug("connection from {} is rendezvous node {}", peer(), *node_id_);
  }
  return true;
}

void Session::handle_native(rendezvous::membership::Request request) {
  if (!become_native()) return;
  ++ctx_->native_requests;
  ctx_->native.handle(*node_id_, std::move(request));
}

bool Session::answer_hello() {
  if (!become_native()) return false;
  const auto daemon = rendezvous::membership::this_version();
  push(rendezvous::membership::encode_version(daemon));
  if (rendezvous::membership::compatible(*framer_.agent(), daemon)) return true;
  // The agent reads VERSION and says the same; nothing it sends next could be understood.
  close(rendezvous::membership::skew_message(framer_.agent(), daemon, ""), true);
  return false;
}

void Session::handle_auth(Frame& frame) {
  if (!become_native()) return;
  if (frame.kind == FrameKind::kAuthHello) {
    ctx_->native.hello(*node_id_, frame.hello_run_id);
  } else {
    ++ctx_->native_requests;
    ctx_->native.handle_auth(*node_id_, frame.auth, std::move(frame.native));
  }
}

void Session::push(std::string_view bytes) {
  if (closed_) return;
  out_.append(bytes);
  flush();
}

void Session::flush() {
  if (closed_) return;
  if (out_.size() > ctx_->limits.max_pending_reply_bytes) {
    close("client does not read its replies (" + std::to_string(out_.size()) + " bytes pending)",
          true);
    return;
  }
  if (!writing_.empty() || out_.empty()) return;  // the running write's handler calls again
  // Replies usually fit the socket's send buffer: write them now, with no handler round trip
  // through the io_context. Whatever is left (a slow reader) or fails goes through
  // async_write, whose handler closes on error: closing here could run inside a store
  // operation that is iterating its waiters.
  boost::system::error_code write_ec;
  const std::size_t written = socket_.write_some(asio::buffer(out_), write_ec);
  if (!write_ec && written == out_.size()) {
    if (out_.capacity() > kKeptReplyCapacity) {
      std::string().swap(out_);  // idle connections keep no large buffer
    } else {
      out_.clear();
    }
    return;
  }
  if (!write_ec) out_.erase(0, written);
  writing_.swap(out_);
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      std::string().swap(self->writing_);
                      if (ec) {
                        self->close("write failed: " + ec.message(), false);
                        return;
                      }
                      self->flush();
                    });
}

void Session::wait_satisfied() {
  if (framer_.native_mode()) {
    const std::string reply(1, static_cast<char>(kStopWaiting));
    if (in_store_query_) {
      put_store_reply(deferred_, reply);  // handle_store() queues it before the query's reply
      return;
    }
    put_store_reply(out_, reply);
  } else {
    codec::put<std::uint8_t>(out_, kStopWaiting);
  }
  flush();
}

void Session::key_changed(WatchEvent event, std::string_view key, std::string_view old_value,
                          std::string_view new_value) {
  codec::put<std::uint8_t>(out_, static_cast<std::uint8_t>(event));
  codec::put_str(out_, key);
  codec::put_str(out_, old_value);
  codec::put_str(out_, new_value);
  flush();
}

}  // namespace ddp::rendezvous
