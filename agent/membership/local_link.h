// The link of a single-node job (--nnodes 1, --standalone; membership_link.h): this node is
// the job's only member, and the job is a real membership::Job in this process, reached
// through membership::Registry as the daemon reaches it. So one node fails, restarts and
// reports root causes exactly as a job of many nodes does: a failure report starts the next
// round (restart count + 1, attempt directory + 1) while --max-restarts allows, else ends the
// job with the root cause's exit code. The node's liveness is beyond reach (nothing to lose:
// it is this process); the Job's deadlines run on a timer. Every StopWorkers the job sends is
// dropped: with one node it answers this node's own report (or its removal, which an
// ErrorEvent tells).
//
// It holds the workers' store from start to close(), on one port (store_bind_host of
// MASTER_ADDR, --master-port or a free one).
//
// Threading: the agent's io_context thread; events are posted, never delivered inside a call.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "agent/config.h"
#include "agent/membership/membership_link.h"
#include "agent/run_setup.h"
#include "common/lifetime.h"
#include "rendezvous/membership/registry.h"

namespace ddp::agent {

class LocalLink final : public MembershipLink {
 public:
  // Starts the workers' store. Errors: those of rendezvous::Server::start (kAddressInUse when
  // the port is taken).
  static Result<std::unique_ptr<LocalLink>> start(boost::asio::io_context& io,
                                                  const AgentConfig& config, const RunSetup& setup);
  LocalLink(boost::asio::io_context& io, std::unique_ptr<rendezvous::Server> store,
            rendezvous::membership::JoinRequest join);
  ~LocalLink() override;

  std::uint16_t store_port() const { return store_->port(); }

  void open(LinkEvents& events) override;
  void send(const rendezvous::membership::Request& request) override;
  rendezvous::Server* worker_store() override { return store_.get(); }
  void wait_finished(std::function<void()> done) override;
  void close() override;

 private:
  // Posts the job's answer to this node, and re-arms the deadline timer.
  void deliver(rendezvous::membership::Events events);

  static constexpr rendezvous::membership::NodeId kNode = 1;
  boost::asio::io_context& io_;
  std::unique_ptr<rendezvous::Server> store_;
  rendezvous::membership::JoinRequest join_;
  rendezvous::membership::Registry registry_;
  boost::asio::steady_timer deadline_;
  LinkEvents* events_ = nullptr;
  bool closed_ = false;
  Lifetime life_;
};

}  // namespace ddp::agent
