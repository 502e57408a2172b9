#include "agent/presence_link.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "agent/presence_wire.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

PresenceLink::PresenceLink(asio::any_io_executor ex, etcd::Endpoint peer, std::string hello)
    : peer_(std::move(peer)), hello_(std::move(hello)), socket_(ex), timer_(ex) {}

std::shared_ptr<PresenceLink> PresenceLink::open(asio::any_io_executor ex, etcd::Endpoint peer,
                                                 std::string hello, Timing timing,
                                                 std::function<void(PeerEnd)> on_gone,
                                                 std::function<void(Status)> on_unreachable) {
  auto link = std::make_shared<PresenceLink>(ex, std::move(peer), std::move(hello));
  link->on_gone_ = std::move(on_gone);
  link->on_unreachable_ = std::move(on_unreachable);
  asio::co_spawn(
      ex, [link, timing] { return link->run(timing); }, asio::detached);
  return link;
}

asio::awaitable<void> PresenceLink::run(Timing timing) {
  auto self = shared_from_this();
  auto unreachable = [&](const std::string& why) {
    if (!closed_) on_unreachable_(io_error("presence endpoint " + peer_.to_string() + ": " + why));
  };
  // The connect deadline: the timer closes the socket, which ends the connect.
  timer_.expires_after(timing.connect_deadline);
  timer_.async_wait([self](boost::system::error_code ec) {
    if (ec || self->connected_) return;
    boost::system::error_code ignored;
    self->socket_.close(ignored);
  });
  tcp::resolver resolver(socket_.get_executor());
  auto [rec, results] =
      co_await resolver.async_resolve(peer_.host, std::to_string(peer_.port), kTuple);
  if (closed_) co_return;
  if (rec) co_return unreachable("cannot resolve: " + rec.message());
  auto [cec, ep] = co_await asio::async_connect(socket_, results, kTuple);
  if (closed_) co_return;
  if (cec) {
    co_return unreachable(socket_.is_open() ? "cannot connect: " + cec.message()
                                            : "no connection within the deadline");
  }
  connected_ = true;
  timer_.cancel();
  auto [wec, written] = co_await asio::async_write(socket_, asio::buffer(hello_), kTuple);
  if (closed_) co_return;
  if (wec) co_return unreachable("cannot send the hello: " + wec.message());
  if (timing.silence_timeout.count() > 0) {
    // Without the check the link still works: the coordinator's lease covers a silent machine.
    if (arm_silence_check(socket_, timing.silence_timeout)) {
      asio::co_spawn(
          socket_.get_executor(),
          [self, timeout = timing.silence_timeout] { return self->beat(timeout); }, asio::detached);
    }
  }
  std::array<char, 64> chunk{};
  for (;;) {
    // The coordinator writes beats, or its bye when it closes on purpose.
    auto [ec, n] = co_await socket_.async_read_some(asio::buffer(chunk), kTuple);
    if (closed_) co_return;
    if (!silent_ && !ec && !holds_bye(std::string_view(chunk.data(), n))) continue;
    // Its bye (it exits, or refused the hello), its end lost, or a local failure.
    const PeerEnd end = silent_ ? PeerEnd::kUnreachable
                        : ec    ? judge_read_error(ec)
                                : PeerEnd::kUnknown;
    if (ec && end == PeerEnd::kUnknown) unreachable("connection failed: " + ec.message());
    closed_ = true;
    timer_.cancel();
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (end != PeerEnd::kUnknown) on_gone_(end);
    co_return;
  }
}

asio::awaitable<void> PresenceLink::beat(std::chrono::milliseconds timeout) {
  auto self = shared_from_this();
  SilenceWatch watch(timeout);
  const auto every = beat_interval(timeout);
  while (!closed_) {
    timer_.expires_after(every);
    co_await timer_.async_wait(kTuple);
    if (closed_) co_return;
    if (watch.tick(socket_, SilenceWatch::Clock::now())) {
      silent_ = true;
      boost::system::error_code ignored;
      co_return socket_.cancel(ignored);  // the read loop reports it
    }
  }
}

void PresenceLink::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  timer_.cancel();
  if (connected_) asio::write(socket_, asio::buffer(kBye), ignored);
  socket_.close(ignored);
}

}  // namespace ddp::agent
