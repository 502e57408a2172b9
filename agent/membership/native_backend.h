// The native rendezvous backend (c10d and static): ddprun's rendezvous daemon, hosted by this
// node (node_servers.h) or by another node or a standalone ddp-rendezvous, reached through
// rendezvous::RdzvClient. Liveness: heartbeats on the connection (the daemon removes a node
// that is silent for keep_alive_interval * keep_alive_max_attempt, and tells it so); pushes:
// RoundComplete, StopWorkers, JobFinished and ErrorEvent on the same connection.
//
// Connecting: a static node of rank > 0 retries reaching the daemon until join_timeout after
// its start (node rank 0 may start later, or the previous job on that port still lingers at
// its end); a c10d node that does not host retries for read_timeout (srun, pbsdsh and ssh start
// every node at once); the host connects once. While the first round forms, how far it is gets
// logged (join_progress.h).
//
// Threading: the agent's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "agent/config.h"
#include "agent/membership/join_progress.h"
#include "agent/membership/node_servers.h"
#include "agent/membership/rdzv_settings.h"
#include "agent/membership/rendezvous_backend.h"
#include "agent/run_setup.h"
#include "rendezvous/rdzv_client.h"

namespace ddp::agent {

class NativeBackend final : public RendezvousBackend {
 public:
  NativeBackend(boost::asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
                RdzvSettings rdzv);
  ~NativeBackend() override;

  // Starts what this node serves (the daemon if it hosts it, its workers' store). Errors name
  // the problem and the fix.
  Status start();
  // The address other nodes reach this one at (--local-addr, else the host name).
  std::string advertised_addr() const;

  void join(RendezvousEvents& events) override;
  void report_success(std::uint64_t round) override;
  void report_failure(std::uint64_t round,
                      std::vector<rendezvous::membership::Failure> failures) override;
  void workers_stopped(std::uint64_t round) override;
  void leave(const std::string& reason) override;
  void wait_finished(std::function<void()> done) override;
  void close() override;

 private:
  bool retries_connecting() const;
  void connect();
  void send_join();
  void on_event(const rendezvous::membership::Payload& payload);
  void on_round(const rendezvous::membership::RoundComplete& r);
  void lost(Status why);
  std::string unreachable_message(const Status& s) const;

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  const RunSetup& setup_;
  RdzvSettings rdzv_;
  NodeServers servers_;
  RendezvousEvents* events_ = nullptr;
  std::shared_ptr<rendezvous::RdzvClient> client_;
  boost::asio::steady_timer rejoin_timer_;  // static rank > 0: pause before joining again
  JoinProgress progress_;                   // until the first round: how far the rendezvous is
  std::chrono::steady_clock::time_point connect_deadline_;  // static rank > 0: retry until
  bool first_round_seen_ = false;
  bool finished_ = false;  // JobFinished came: the daemon's close is expected
  bool closed_ = false;
};

}  // namespace ddp::agent
