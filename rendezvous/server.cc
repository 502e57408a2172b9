#include "rendezvous/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <vector>

#include "rendezvous/session.h"

namespace ddp::rendezvous {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string format_endpoint(const asio::ip::address& address, std::uint16_t port) {
  const std::string host = address.to_string();
  return address.is_v6() ? "[" + host + "]:" + std::to_string(port)
                         : host + ":" + std::to_string(port);
}

// Shared between the Server object and its accept coroutine, so a Server destroyed
// while an accept is pending leaves nothing dangling.
struct Listener {
  Listener(asio::io_context& io, const ServerOptions& options)
      : acceptor(io),
        sessions(std::make_shared<SessionContext>(io.get_executor(), options.limits,
                                                  options.registry, options.auth)) {}
  tcp::acceptor acceptor;
  std::shared_ptr<SessionContext> sessions;
};

// Accepts drained per wake-up: bounded so a connection storm cannot hold up the sessions'
// replies for long.
constexpr int kMaxAcceptsPerWakeup = 64;

// Connections the kernel may hold before they are accepted. It caps this at
// net.core.somaxconn (4096 by default), so a host that expects tens of thousands of workers to
// connect at once raises that sysctl and the daemon follows; SOMAXCONN would pin it to 4096.
constexpr int kListenBacklog = 65535;

asio::awaitable<void> accept_loop(std::shared_ptr<Listener> listener) {
  for (;;) {
    boost::system::error_code ec;
    tcp::endpoint peer;
    tcp::socket socket = co_await listener->acceptor.async_accept(
        peer, asio::redirect_error(asio::use_awaitable, ec));
    if (!listener->acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
      spdlog::warn("accept failed: {}; raise the open-file limit (ulimit -n)", ec.message());
      // Back off instead of spinning: the pending connection stays in the backlog until a
      // descriptor frees up, and nothing signals that moment.
      asio::steady_timer pause(listener->acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (ec) {
      spdlog::debug("accept failed: {}", ec.message());
      continue;
    }
    Session::start(listener->sessions, std::move(socket), peer);
    // A burst (thousands of workers connecting at once) is drained here without a reactor
    // round trip per connection; the first would-block (or any error) returns to the
    // asynchronous accept above, which also handles the error cases.
    for (int drained = 0; drained < kMaxAcceptsPerWakeup; ++drained) {
      tcp::socket next = listener->acceptor.accept(peer, ec);
      if (ec) break;
      Session::start(listener->sessions, std::move(next), peer);
    }
  }
}

Result<tcp::endpoint> resolve_bind_address(asio::io_context& io, const std::string& host,
                                           std::uint16_t port) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return invalid_argument("cannot resolve bind address '" + host + "': " + ec.message() +
                            "; pass an IP address or a resolvable host name to --host");
  }
  return results.begin()->endpoint();
}

Status open_and_bind(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, bool dual_stack) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && dual_stack) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return io_error("cannot open a listening socket: " + ec.message());
  acceptor.bind(endpoint, ec);
  if (ec == asio::error::address_in_use) {
    return address_in_use("address " + format_endpoint(endpoint.address(), endpoint.port()) +
                          " is already in use; pick another --port or stop the other process");
  }
  if (ec) {
    return io_error("cannot bind " + format_endpoint(endpoint.address(), endpoint.port()) + ": " +
                    ec.message());
  }
  acceptor.listen(kListenBacklog, ec);
  if (ec) return io_error("cannot listen: " + ec.message());
  acceptor.non_blocking(true, ec);  // accept_loop drains bursts with synchronous accepts
  if (ec) return io_error("cannot make the listening socket non-blocking: " + ec.message());
  return Status::ok();
}

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(std::shared_ptr<Listener> listener) : listener_(std::move(listener)) {
    auto local = listener_->acceptor.local_endpoint();
    port_ = local.port();
    host_ = local.address().to_string();
  }
  ~ServerImpl() override { stop(); }

  std::uint16_t port() const override { return port_; }
  std::string host() const override { return host_; }

  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    boost::system::error_code ignored;
    listener_->acceptor.close(ignored);
    // close() unregisters the session from `live`, so iterate over a copy.
    std::vector<Session*> live(listener_->sessions->live.begin(), listener_->sessions->live.end());
    for (Session* s : live) s->close("server stopping", false);
    listener_->sessions->native.stop();
  }

  void when_job_drained(std::string run_id, std::function<void()> done) override {
    if (stopped_) return;
    listener_->sessions->native.when_drained(std::move(run_id), std::move(done));
  }

  std::optional<rendezvous::membership::JobFinished> job_outcome(
      const std::string& run_id) const override {
    const rendezvous::membership::Job* job = listener_->sessions->native.registry().find(run_id);
    if (job == nullptr || job->state() != rendezvous::membership::Job::State::kFinished)
      return std::nullopt;
    return rendezvous::membership::JobFinished{job->exit_code(), job->finish_reason(),
                                               job->root_cause()};
  }

 private:
  std::shared_ptr<Listener> listener_;
  std::uint16_t port_ = 0;
  std::string host_;
  bool stopped_ = false;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::start(asio::io_context& io, const ServerOptions& options) {
  auto listener = std::make_shared<Listener>(io, options);
  if (options.host.empty()) {
    Status v6 = open_and_bind(listener->acceptor, tcp::endpoint(tcp::v6(), options.port), true);
    // Fall back to IPv4 only when IPv6 itself is unavailable, not when the port is taken.
    if (!v6 && v6.code() == ErrorCode::kAddressInUse) return v6;
    if (!v6) {
      boost::system::error_code ignored;
      listener->acceptor.close(ignored);
      Status v4 = open_and_bind(listener->acceptor, tcp::endpoint(tcp::v4(), options.port), false);
      if (!v4) return v4;
    }
  } else {
    auto endpoint = resolve_bind_address(io, options.host, options.port);
    if (!endpoint) return endpoint.status();
    Status bound = open_and_bind(listener->acceptor, *endpoint, false);
    if (!bound) return bound;
  }
  listener->sessions->native.set_exposed(
      !listener->acceptor.local_endpoint().address().is_loopback());
  asio::co_spawn(io, accept_loop(listener), asio::detached);
  std::unique_ptr<Server> server = std::make_unique<ServerImpl>(listener);
  spdlog::info("store listening on {}",
               format_endpoint(listener->acceptor.local_endpoint().address(), server->port()));
  return server;
}

}  // namespace ddp::rendezvous
