// The rendezvous of a single-node job (--nnodes 1, --standalone): no peers, so this node is
// group rank 0 of 1 in every round, and it decides restarts itself as the daemon would for a
// job: a failure report starts the next round (restart count + 1, attempt directory + 1) while
// --max-restarts allows, else ends the job with the root cause's exit code (the earliest
// failure, as the daemon picks it). It holds the workers' store from start to close(), on one
// port; every round after the first gets it empty (Server::reset_store): a failure is reported
// once every worker of the round is reaped, so no key of an earlier attempt is ever seen.
//
// Threading: the agent's io_context thread; events are posted, never delivered inside a call.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "agent/config.h"
#include "agent/membership/rendezvous_backend.h"
#include "rendezvous/server.h"

namespace ddp::agent {

class LocalBackend final : public RendezvousBackend {
 public:
  // `workers`: this node's worker count, the world size. Starts the workers' store on
  // `store_host`:`store_port` (0: a free port) with connection limits `limits`. Errors: those of
  // rendezvous::Server::start
  // (kAddressInUse when the port is taken).
  static Result<std::unique_ptr<LocalBackend>> start(
      boost::asio::io_context& io, const std::string& store_host, std::uint16_t store_port,
      int workers, int max_restarts, const rendezvous::ConnectionLimits& limits = {});

  std::uint16_t store_port() const { return store_->port(); }

  void join(RendezvousEvents& events) override;
  void report_success(std::uint64_t round) override;
  void report_failure(std::uint64_t round,
                      std::vector<rendezvous::membership::Failure> failures) override;
  void workers_stopped(std::uint64_t round) override;
  void leave(const std::string&) override {}
  void wait_finished(std::function<void()> done) override;
  void close() override;

  LocalBackend(boost::asio::io_context& io, std::unique_ptr<rendezvous::Server> store,
               std::string store_addr, int workers, int max_restarts);

 private:
  void start_round();
  void finish(rendezvous::membership::JobFinished finished);

  boost::asio::io_context& io_;
  std::unique_ptr<rendezvous::Server> store_;
  std::string store_addr_;
  int workers_;  // the world size: this node's workers
  int max_restarts_;
  RendezvousEvents* events_ = nullptr;
  std::uint64_t round_ = 0;
  int restart_count_ = 0;
  bool closed_ = false;
};

}  // namespace ddp::agent
