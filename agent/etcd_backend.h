// The etcd rendezvous backend (--rdzv-backend etcd; docs/etcd.md): the job's membership lives
// in etcd (v3 API through the JSON gateway, etcd/), its state machine in whichever agent won
// the election (etcd_coordinator.h). This node:
//  - holds a lease (lease_ttl, kept alive every TTL/3) that carries its node key: its expiry
//    is this node lost for the others; a clean exit revokes it at once;
//  - joins by creating P/nodes/<node_key> (the encoded JOIN), reports by writing request keys,
//    and hears the job through a watch on its own event prefix (read, then watch from the
//    next revision);
//  - runs for coordinator whenever P/coordinator is free, and when the coordinator goes
//    (its lease expired) stops its running round's workers: the new coordinator re-forms the
//    job. A new round's assignment is held until this node answered for the previous round;
//  - keeps a presence connection to the coordinating agent (etcd_presence.h): a dead agent
//    process is noticed when its socket closes, not when its lease expires.
// Failures: etcd unreachable at start (kIo naming the endpoints, after read_timeout capped
// by join_timeout), the lease could not be renewed for its TTL (lost etcd mid-job) or expired
// (kPeerGone), the run id finished (kJobFinished), a refused JOIN: on_lost.
//
// Threading: the agent's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "agent/config.h"
#include "agent/etcd_coordinator.h"
#include "agent/etcd_keys.h"
#include "agent/etcd_presence.h"
#include "agent/etcd_settings.h"
#include "agent/join_progress.h"
#include "agent/node_servers.h"
#include "agent/rendezvous_backend.h"
#include "agent/run_setup.h"
#include "etcd/client.h"
#include "etcd/watch.h"

namespace ddp::agent {

class EtcdBackend final : public RendezvousBackend {
 public:
  EtcdBackend(boost::asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
              EtcdSettings settings);
  ~EtcdBackend() override;

  // Starts this node's workers' store. Errors name the port and the fix.
  Status start();
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
  boost::asio::awaitable<void> run_join();
  boost::asio::awaitable<void> keep_alive();
  boost::asio::awaitable<void> campaign();
  void on_coordinator_change(const std::vector<etcd::WatchEvent>& events);
  void on_events(const std::vector<etcd::WatchEvent>& events);
  void on_payload(const rendezvous::membership::Payload& payload);
  void on_round(const rendezvous::membership::RoundComplete& r);
  void deliver_round(const rendezvous::membership::RoundComplete& r);
  void answered(std::uint64_t round);
  void send(const rendezvous::membership::Request& request);
  void lost(Status why);

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  const RunSetup& setup_;
  EtcdSettings settings_;
  EtcdKeys keys_;
  std::string node_key_;
  NodeServers servers_;
  etcd::Client client_;            // calls that may wait up to read_timeout
  etcd::Client keepalive_client_;  // keep-alives: bounded by a third of the TTL
  EtcdPresence presence_;          // the fast liveness signal beside the lease
  RendezvousEvents* events_ = nullptr;
  std::int64_t lease_ = 0;
  std::unique_ptr<EtcdCoordinator> coordinator_;
  std::shared_ptr<etcd::Watch> event_watch_;
  std::shared_ptr<etcd::Watch> coordinator_watch_;
  boost::asio::steady_timer keep_alive_timer_;
  JoinProgress progress_;  // until the first round: how far the rendezvous is
  std::uint64_t request_seq_ = 0;
  std::optional<std::uint64_t> running_round_;  // delivered, not answered yet
  bool stop_told_ = false;                      // on_stop_workers given for running_round_
  std::optional<rendezvous::membership::RoundComplete> held_round_;
  std::optional<std::string> leave_reason_;
  std::int64_t coordinator_gone_revision_ = 0;  // the last coordinator key deletion seen
  bool campaigning_ = false;
  bool first_round_seen_ = false;
  bool finished_ = false;
  bool lost_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for coroutines in flight
};

}  // namespace ddp::agent
