#include "agent/presence_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "rendezvous/bind.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

using namespace std::chrono_literals;

}  // namespace

PresenceServer::PresenceServer(asio::io_context& io, HelloCheck check, Gone on_gone)
    : io_(io),
      check_(std::move(check)),
      on_gone_(std::move(on_gone)),
      acceptor_(io),
      retry_timer_(io),
      beat_timer_(io) {}

PresenceServer::~PresenceServer() { stop(); }

Status PresenceServer::listen(const std::string& host, Limits limits) {
  limits_ = limits;
  if (Status s = rendezvous::open_listener(acceptor_, host, 0, "presence"); !s) return s;
  boost::system::error_code ec;
  port_ = acceptor_.local_endpoint(ec).port();
  if (ec) return io_error("presence listener: " + ec.message());
  asio::co_spawn(io_, accept_loop(), asio::detached);
  if (limits_.silence_timeout.count() > 0) asio::co_spawn(io_, beat_loop(), asio::detached);
  return Status::ok();
}

asio::awaitable<void> PresenceServer::accept_loop() {
  auto alive = alive_;
  auto pause = 100ms;
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(kTuple);
    if (!*alive || stopped_) co_return;
    if (ec) {
      // EMFILE and the like repeat at once: pause before the next try rather than spin.
      // Agents that cannot connect meanwhile are watched through their leases.
      if (!accept_error_logged_) {
        accept_error_logged_ = true;
        spdlog::warn(
            "presence listener: accept failed ({}); retrying with a pause, agents it cannot "
            "take meanwhile are watched through their etcd leases (logged once)",
            ec.message());
      }
      retry_timer_.expires_after(pause);
      co_await retry_timer_.async_wait(kTuple);
      if (!*alive || stopped_) co_return;
      pause = std::min(2 * pause, std::chrono::milliseconds(2s));
      continue;
    }
    pause = 100ms;
    if (connections_.size() >= limits_.max_connections) {
      refuse(socket, "the presence listener holds its most connections");
      continue;
    }
    if (limits_.silence_timeout.count() > 0) {
      if (Status s = arm_silence_check(socket, limits_.silence_timeout); !s && !arm_error_logged_) {
        arm_error_logged_ = true;
        spdlog::warn("{}; a silent agent machine is left to its lease (logged once)", s.message());
      }
    }
    auto id = next_id_++;
    auto shared = std::make_shared<tcp::socket>(std::move(socket));
    connections_.emplace(id, Connection{shared, SilenceWatch(limits_.silence_timeout)});
    asio::co_spawn(io_, serve(id, std::move(shared)), asio::detached);
  }
}

asio::awaitable<void> PresenceServer::serve(std::uint64_t id, std::shared_ptr<tcp::socket> socket) {
  auto alive = alive_;
  std::string buffer;
  // No complete hello by the deadline: the read is cancelled and the connection closed (bye).
  auto deadline = std::make_shared<asio::steady_timer>(io_, limits_.hello_deadline);
  deadline->async_wait([socket](boost::system::error_code e) {
    boost::system::error_code ignored;
    if (!e) socket->cancel(ignored);
  });
  auto [ec, n] = co_await asio::async_read_until(*socket, asio::dynamic_buffer(buffer, kMaxHello),
                                                 std::string(kHelloEnd), kTuple);
  deadline->cancel();
  if (ec == asio::error::operation_aborted && *alive && !stopped_) {
    refuse(*socket, "a connection sent no complete hello within its deadline");
    connections_.erase(id);
    co_return;
  }
  std::optional<PresenceHello> hello;
  if (!ec && *alive && !stopped_) {
    auto decoded = decode_hello(std::string_view(buffer).substr(0, n));
    if (decoded) {
      hello = std::move(decoded).value();
    } else {
      spdlog::warn("presence connection: {}; closed", decoded.status().message());
    }
  }
  if (hello) {
    Status accepted = co_await check_(*hello);
    if (!*alive || stopped_) co_return;
    if (!accepted) {
      spdlog::warn("presence: refused the hello of node {}: {}; closed", hello->node_key,
                   accepted.message());
      hello.reset();
    }
  }
  // After the hello the agent sends beats, then its bye on a deliberate close.
  bool orderly = hello && holds_bye(std::string_view(buffer).substr(n));
  std::array<char, 64> chunk{};
  while (hello && !orderly && *alive && !stopped_) {
    auto [rec, got] = co_await socket->async_read_some(asio::buffer(chunk), kTuple);
    if (!*alive || stopped_) co_return;
    auto c = connections_.find(id);
    const bool silent = c != connections_.end() && c->second.silent;  // the beat timer's verdict
    if (!rec && !silent) {
      orderly = holds_bye(std::string_view(chunk.data(), got));
      continue;
    }
    const PeerEnd end = silent ? PeerEnd::kUnreachable : judge_read_error(rec);
    if (end != PeerEnd::kUnknown) on_gone_(*hello, end);
    break;
  }
  if (!*alive) co_return;
  boost::system::error_code ignored;
  // Closing on purpose (the hello was refused or never complete): a bye, so the agent does
  // not take this for this process's death.
  if (!hello && judge_read_error(ec) != PeerEnd::kClosed) {
    asio::write(*socket, asio::buffer(kBye), ignored);
  }
  socket->close(ignored);
  connections_.erase(id);
}

asio::awaitable<void> PresenceServer::beat_loop() {
  auto alive = alive_;
  const auto every = beat_interval(limits_.silence_timeout);
  for (;;) {
    beat_timer_.expires_after(every);
    co_await beat_timer_.async_wait(kTuple);
    if (!*alive || stopped_) co_return;
    const auto now = SilenceWatch::Clock::now();
    for (auto& [id, c] : connections_) {
      if (c.silent || !c.watch.tick(*c.socket, now)) continue;
      c.silent = true;
      boost::system::error_code ignored;
      c.socket->cancel(ignored);  // its serve() reports it
    }
  }
}

void PresenceServer::refuse(tcp::socket& socket, const char* why) {
  if (!refusal_logged_) {
    refusal_logged_ = true;
    spdlog::warn("presence listener: {}: closed (logged once)", why);
  }
  boost::system::error_code ignored;
  asio::write(socket, asio::buffer(kBye), ignored);  // on purpose: not this process's death
  socket.close(ignored);
}

void PresenceServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel();
  beat_timer_.cancel();
  for (auto& [id, c] : connections_) {
    auto& socket = c.socket;
    asio::write(*socket, asio::buffer(kBye), ignored);  // this agent exits on purpose
    socket->close(ignored);
  }
  connections_.clear();
}

}  // namespace ddp::agent
