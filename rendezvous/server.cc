#include "rendezvous/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <vector>

#include "rendezvous/bind.h"
#include "rendezvous/session.h"

namespace ddp::rendezvous {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// Shared between the Server object and its accept coroutine, so a Server destroyed
// while an accept is pending leaves nothing dangling.
struct Listener {
  Listener(asio::io_context& io, const ServerOptions& options)
      : acceptor(io),
        sessions(std::make_shared<SessionContext>(io.get_executor(), options.limits,
                                                  options.registry)) {}
  tcp::acceptor acceptor;
  std::shared_ptr<SessionContext> sessions;
};

// Accepts drained per wake-up: bounded so a connection storm cannot hold up the sessions'
// replies for long.
constexpr int kMaxAcceptsPerWakeup = 64;

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

  ServerStats stats() const override {
    const SessionContext& ctx = *listener_->sessions;
    ServerStats s;
    s.connections = ctx.live.size();
    s.keys = ctx.store.num_keys();
    s.queues = ctx.store.queue_count();
    s.bytes = ctx.store.data_bytes();
    s.parked_waits = ctx.store.parked_waits();
    s.ops = ctx.ops;
    s.native_requests = ctx.native_requests;
    return s;
  }

  const rendezvous::membership::Registry& registry() const override {
    return listener_->sessions->native.registry();
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
  if (Status bound = open_listener(listener->acceptor, options.host, options.port, "--port");
      !bound) {
    return bound;
  }
  asio::co_spawn(io, accept_loop(listener), asio::detached);
  std::unique_ptr<Server> server = std::make_unique<ServerImpl>(listener);
  spdlog::info("store listening on {}",
               format_endpoint(listener->acceptor.local_endpoint().address(), server->port()));
  return server;
}

}  // namespace ddp::rendezvous
