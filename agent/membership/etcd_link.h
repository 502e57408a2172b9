// The etcd link (--rdzv-backend etcd; docs/etcd.md; membership_link.h): the job's membership
// lives in etcd (v3 API through the JSON gateway, etcd/), its state machine in whichever agent won
// the election (etcd_coordinator.h). This node:
//  - holds a lease (lease_ttl, kept alive every TTL/3) that carries its node key: its end is
//    this node lost for the others. A clean exit revokes it; so does the agent's death watch
//    when the agent dies without one (SIGKILL, crash: lease_revoker below), so only a lost
//    machine (or a frozen agent) waits for the lease to expire;
//  - joins by creating P/nodes/<node_key> (the encoded JOIN), reports by writing request keys,
//    and hears the job through a watch on its own event prefix (read, then watch from the
//    next revision);
//  - runs for coordinator whenever P/coordinator is free, and when the coordinator goes
//    (its lease ended) tells on_reform: the new coordinator re-forms the job.
// Failures: etcd unreachable at start (kIo naming the endpoints, after read_timeout capped
// by join_timeout), the lease could not be renewed for its TTL (lost etcd mid-job) or expired
// (kPeerGone), the run id finished (kJobFinished), a refused JOIN: on_link_lost. A Leave is
// kept for the destructor's last words.
//
// Threading: the agent's io_context thread; the destructor on that thread once the loop has
// stopped (below).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "agent/config.h"
#include "agent/membership/etcd_settings.h"
#include "agent/membership/membership_link.h"
#include "agent/membership/node_servers.h"
#include "agent/run_setup.h"
#include "common/lifetime.h"
#include "etcd/client.h"
#include "etcd/election.h"
#include "etcd/session.h"
#include "etcd/watch.h"
#include "proc/death_watch.h"
#include "rendezvous/etcd_hub/etcd_coordinator.h"
#include "rendezvous/etcd_hub/etcd_keys.h"

namespace ddp::agent {

// The death watch's last words for an etcd agent (proc/death_watch.h): the note is this
// agent's lease id, which they revoke (one blocking call, at most 2 s) in the watcher once the
// agent died without revoking it itself.
proc::DeathWatch::LastWords lease_revoker(const EtcdSettings& settings);

class EtcdLink final : public MembershipLink {
 public:
  // Starts this node's workers' store (errors name the port and the fix). `death_watch` (may
  // be null) is told the lease while this node holds one.
  static Result<std::unique_ptr<EtcdLink>> start(boost::asio::io_context& io,
                                                 const AgentConfig& config, const RunSetup& setup,
                                                 EtcdSettings settings,
                                                 proc::DeathWatch* death_watch);
  EtcdLink(boost::asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
           EtcdSettings settings, proc::DeathWatch* death_watch);
  // The last words, once the agent's io_context has stopped (the agent destroys its backend
  // after its loop returned; close() must have run): a Leave when one was sent, then the
  // lease revoked, so the others hear this node went now, not at the lease's expiry. Blocking,
  // each call bounded (2 s; 300 ms after etcd was lost).
  ~EtcdLink() override;

  void open(LinkEvents& events) override;
  void send(const rendezvous::membership::Request& request) override;
  rendezvous::Server* worker_store() override { return servers_.worker_store(); }
  void wait_finished(std::function<void()> done) override;
  // Ends the watches, timers, the coordinator and the workers' store; never waits on etcd
  // (the lease outlives it until the destructor).
  void close() override;

 private:
  boost::asio::awaitable<void> run_join();
  boost::asio::awaitable<void> campaign();
  void on_vacated(std::int64_t revision);
  void on_events(const std::vector<etcd::WatchEvent>& events);
  void lost(Status why);

  boost::asio::io_context& io_;
  const RunSetup& setup_;
  EtcdSettings settings_;
  rendezvous::EtcdKeys keys_;
  rendezvous::membership::JoinRequest join_;
  NodeServers servers_;
  etcd::Client client_;            // calls that may wait up to read_timeout
  proc::DeathWatch* death_watch_;  // may be null
  LinkEvents* events_ = nullptr;
  std::unique_ptr<etcd::Session> session_;  // this node's lease, kept alive
  std::int64_t lease_ = 0;                  // session_'s, kept after it closed
  std::unique_ptr<rendezvous::EtcdCoordinator> coordinator_;
  std::shared_ptr<etcd::Watch> event_watch_;
  std::optional<etcd::Election> election_;  // for P/coordinator, under lease_
  std::uint64_t request_seq_ = 0;
  std::optional<std::string> leave_reason_;
  std::int64_t coordinator_gone_revision_ = 0;  // the last coordinator key deletion seen
  bool campaigning_ = false;
  bool finished_ = false;  // JobFinished passed on: no more campaigns or pushes
  bool lost_ = false;
  bool closed_ = false;
  Lifetime life_;  // for coroutines in flight
};

}  // namespace ddp::agent
