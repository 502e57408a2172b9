#include "agent/membership/local_backend.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "rendezvous/membership/job.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;

Result<std::unique_ptr<LocalBackend>> LocalBackend::start(
    boost::asio::io_context& io, const std::string& store_host, std::uint16_t store_port,
    int workers, int max_restarts, const rendezvous::ConnectionLimits& limits) {
  rendezvous::ServerOptions options;
  options.connections = limits;
  options.host = store_host;
  options.port = store_port;
  auto store = rendezvous::Server::start(io, options);
  if (!store) return store.status();
  return std::make_unique<LocalBackend>(io, std::move(store).value(),
                                        store_host.empty() ? "127.0.0.1" : store_host, workers,
                                        max_restarts);
}

LocalBackend::LocalBackend(boost::asio::io_context& io, std::unique_ptr<rendezvous::Server> store,
                           std::string store_addr, int workers, int max_restarts)
    : io_(io),
      store_(std::move(store)),
      store_addr_(std::move(store_addr)),
      workers_(workers),
      max_restarts_(max_restarts) {}

void LocalBackend::join(RendezvousEvents& events) {
  events_ = &events;
  start_round();
}

void LocalBackend::start_round() {
  if (round_ != 0) store_->reset_store();
  Round r;
  r.round = ++round_;
  r.restart_count = restart_count_;
  r.world_size = workers_;
  r.store_addr = store_addr_;
  r.store_port = store_->port();
  boost::asio::post(io_, [this, r] {
    if (!closed_) events_->on_round(r);
  });
}

void LocalBackend::finish(membership::JobFinished finished) {
  boost::asio::post(io_, [this, finished = std::move(finished)] {
    if (!closed_) events_->on_job_finished(finished);
  });
}

void LocalBackend::report_success(std::uint64_t) { finish({0, {}, std::nullopt}); }

void LocalBackend::report_failure(std::uint64_t, std::vector<membership::Failure> failures) {
  if (restart_count_ < max_restarts_) {
    ++restart_count_;
    spdlog::info("restarting the worker group (restart {} of {})", restart_count_, max_restarts_);
    return start_round();
  }
  const std::optional<membership::Failure> root = membership::root_cause_of(failures);
  finish({membership::failure_exit_code(root), {}, root});
}

void LocalBackend::workers_stopped(std::uint64_t) {
  // Nothing stops a single node's workers but this node (a signal: it leaves instead).
  finish({1, "the workers were stopped", std::nullopt});
}

void LocalBackend::wait_finished(std::function<void()> done) {
  boost::asio::post(io_, [this, done = std::move(done)] {
    if (!closed_) done();
  });
}

void LocalBackend::close() {
  if (closed_) return;
  closed_ = true;
  store_->stop();
}

}  // namespace ddp::agent
