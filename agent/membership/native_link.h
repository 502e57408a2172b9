// The link to ddprun's rendezvous daemon (c10d and static, and under an EtcdLink the link to the
// elected host; membership_link.h): hosted by this node (node_servers.h) or by another node or a
// standalone ddp-rendezvous, reached through rendezvous::RdzvClient. Liveness: heartbeats on
// the connection (the daemon removes a node that is silent for keep_alive_interval *
// keep_alive_max_attempt, and tells it so with an ErrorEvent); pushes on the same connection.
//
// Connecting: a static node of rank > 0 retries reaching the daemon until join_timeout after
// its start (node rank 0 may start later, or the previous job on that port still lingers at
// its end: a join refused with kJobFinished is tried again); a node that does not host retries
// for read_timeout (srun, pbsdsh and ssh start every node at once); the host connects once. A
// retrying node also tries again when the daemon closes the connection before answering its
// JOIN (a daemon on its way out). Static: every round's workers' store is the daemon on
// --master-addr:--master-port.
//
// Threading: the agent's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "agent/config.h"
#include "agent/membership/membership_link.h"
#include "agent/membership/node_servers.h"
#include "agent/membership/rdzv_settings.h"
#include "agent/run_setup.h"
#include "common/lifetime.h"
#include "rendezvous/rdzv_client.h"

namespace ddp::agent {

class NativeLink final : public MembershipLink {
 public:
  // Starts what this node serves (the daemon if it hosts it, its workers' store). Errors name
  // the problem and the fix.
  static Result<std::unique_ptr<NativeLink>> start(boost::asio::io_context& io,
                                                   const AgentConfig& config, const RunSetup& setup,
                                                   RdzvSettings rdzv);
  NativeLink(boost::asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
             RdzvSettings rdzv);
  ~NativeLink() override;

  void open(LinkEvents& events) override;
  void send(const rendezvous::membership::Request& request) override;
  rendezvous::Server* worker_store() override { return servers_.worker_store(); }
  void wait_finished(std::function<void()> done) override;
  void close() override;
  // The job as this node's hosted daemon has it (etcd: the host records its facts); null
  // when it hosts none.
  const rendezvous::membership::Job* hosted_job() const { return servers_.hosted_job(); }
  std::uint16_t daemon_port() const { return servers_.daemon_port(); }

 private:
  using Clock = std::chrono::steady_clock;
  bool retries_connecting() const;
  void connect();
  void connect_failed(Status s);
  void retry_after(std::chrono::milliseconds pause);
  void send_join();
  void on_push(rendezvous::membership::Payload payload);
  void lost(Status why);
  std::string unreachable_message(const std::string& problem) const;

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  const RunSetup& setup_;
  RdzvSettings rdzv_;
  NodeServers servers_;
  LinkEvents* events_ = nullptr;
  std::shared_ptr<rendezvous::RdzvClient> client_;
  // Connecting: one attempt when hosting the daemon; else attempts until connect_deadline_,
  // paused 50 ms doubling to 1 s (a refused join of a finished job: 100 ms).
  boost::asio::steady_timer retry_timer_;
  std::chrono::milliseconds retry_for_{0};
  Clock::time_point connect_deadline_;
  std::chrono::milliseconds pause_{50};
  bool announced_ = false;  // "not reachable yet" logged
  // The last attempt connected and its JOIN was closed unanswered: a server that is not a ddprun
  // rendezvous (a torchrun agent's store) does that to every attempt.
  bool closed_unanswered_ = false;
  bool closed_ = false;
  Lifetime life_;
};

}  // namespace ddp::agent
