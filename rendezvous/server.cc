#include "rendezvous/server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
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
  Listener(asio::io_context& io, const ServerOptions& options, ConnectionCaps caps)
      : acceptor(io),
        sessions(std::make_shared<SessionContext>(io.get_executor(), options.limits,
                                                  options.registry, options.connections, caps,
                                                  options.auth)) {
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  ~Listener() {
    if (spare_fd >= 0) ::close(spare_fd);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  tcp::acceptor acceptor;
  std::shared_ptr<SessionContext> sessions;
  // Held open so that, out of descriptors, the accept loop can still take the pending connection
  // off the backlog and close it (the peer learns at once) instead of leaving it there.
  int spare_fd = -1;
};

// Accepts drained per wake-up: bounded so a connection storm cannot hold up the sessions'
// replies for long.
constexpr int kMaxAcceptsPerWakeup = 64;

// Pauses of the accept loop while the process has no descriptor to accept with: doubled from the
// first to the last while it lasts, so a full descriptor table costs a few wake-ups a second.
constexpr auto kFirstAcceptPause = std::chrono::milliseconds(20);
constexpr auto kLastAcceptPause = std::chrono::seconds(1);

// Starts a session for an accepted connection when the caps allow it, else closes it at once.
void admit(Listener& listener, tcp::socket socket, const tcp::endpoint& peer) {
  SessionContext& ctx = *listener.sessions;
  Admission::Ticket ticket;
  const AdmitResult result = ctx.admission.admit(peer.address(), ticket);
  if (result == AdmitResult::kAdmitted) {
    Session::start(listener.sessions, std::move(socket), peer, std::move(ticket));
    return;
  }
  ctx.note_refusal(result == AdmitResult::kTotalFull ? Refusal::kTotalFull : Refusal::kPeerFull,
                   peer.address());
  boost::system::error_code ignored;
  socket.close(ignored);
}

// Out of descriptors: frees the spare one, takes one pending connection off the backlog and
// closes it, then takes the spare back. True when a connection was taken off.
bool shed_one(Listener& listener) {
  if (listener.spare_fd < 0) return false;
  ::close(listener.spare_fd);
  listener.spare_fd = -1;
  boost::system::error_code ec;
  tcp::endpoint peer;
  tcp::socket socket = listener.acceptor.accept(peer, ec);
  const bool shed = !ec;
  if (shed) {
    listener.sessions->note_refusal(Refusal::kDescriptors, peer.address());
    socket.close(ec);
  }
  listener.spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return shed;
}

asio::awaitable<void> accept_loop(std::shared_ptr<Listener> listener) {
  auto pause = kFirstAcceptPause;
  for (;;) {
    boost::system::error_code ec;
    tcp::endpoint peer;
    tcp::socket socket = co_await listener->acceptor.async_accept(
        peer, asio::redirect_error(asio::use_awaitable, ec));
    if (!listener->acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
        ec.value() == ENFILE) {
      // Out of descriptors: the pending connection is shed with the spare descriptor.
      if (shed_one(*listener)) continue;
      // No spare descriptor either (the system-wide table is full): wait, doubling the pause.
      // The listening socket stays readable while the backlog holds connections, so waiting
      // for readiness instead would wake at once, again and again.
      spdlog::debug("accept failed: {}; pausing {}ms", ec.message(), pause.count());
      asio::steady_timer timer(listener->acceptor.get_executor(), pause);
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      pause = std::min<std::chrono::milliseconds>(pause * 2, kLastAcceptPause);
      continue;
    }
    if (ec) {
      spdlog::debug("accept failed: {}", ec.message());
      continue;
    }
    pause = kFirstAcceptPause;
    admit(*listener, std::move(socket), peer);
    // A burst (thousands of workers connecting at once) is drained here without a reactor
    // round trip per connection; the first would-block (or any error) returns to the
    // asynchronous accept above, which also handles the error cases.
    for (int drained = 0; drained < kMaxAcceptsPerWakeup; ++drained) {
      tcp::socket next = listener->acceptor.accept(peer, ec);
      if (ec) break;
      admit(*listener, std::move(next), peer);
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
    listener_->sessions->native.stop();  // first: the closures below are not departures
    // close() unregisters the session from `live`, so iterate over a copy.
    std::vector<Session*> live(listener_->sessions->live.begin(), listener_->sessions->live.end());
    for (Session* s : live) s->close("server stopping", false);
  }

  void reset_store() override {
    std::vector<Session*> live(listener_->sessions->live.begin(), listener_->sessions->live.end());
    for (Session* s : live) {
      if (!s->native()) s->close("the store starts afresh for a new attempt", false);
    }
    listener_->sessions->store.clear();
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
    rendezvous::membership::JobFinished finished;
    finished.exit_code = job->exit_code();
    finished.reason = job->finish_reason();
    finished.root_cause = job->root_cause();
    return finished;
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
  auto caps = resolve_caps(options.connections, open_file_limit());
  if (!caps) return caps.status();
  auto listener = std::make_shared<Listener>(io, options, *caps);
  if (Status bound = open_listener(listener->acceptor, options.host, options.port, "--port");
      !bound) {
    return bound;
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
