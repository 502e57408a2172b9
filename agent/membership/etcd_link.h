// The etcd link (--rdzv-backend etcd; docs/etcd.md; membership_link.h). etcd elects which agent
// hosts the job's rendezvous daemon (ddprun's native daemon, as c10d's embedded one); every
// agent, the host included, takes part through a NativeLink to it. So the rules, liveness
// (heartbeats, closed connections) and pushes are c10d's; etcd adds only that the host can
// be replaced. This node:
//  - holds a lease (etcd::Session, lease_ttl): it carries P/host when this node hosts, and
//    P/spares/<node key> while this node waits as a spare. A clean exit revokes it; so does the
//    agent's death watch when the agent dies without one (lease_revoker below); a lost machine
//    or a frozen agent lets it expire;
//  - refuses a run id whose P/finished exists;
//  - seeks the host: starts a daemon of its own (port 0, resumed from P/state and what this
//    node saw of the job) and campaigns for P/host with its HOST:PORT; the winner keeps it and
//    joins it, a loser closes it and joins the holder's;
//  - when the host is lost (P/host vacated, or the connection to it lost after it was joined)
//    tells on_reform (the running round stops) and seeks again: a new host resumes the job
//    at the next round with the restart count, departures, expected survivors, their group
//    ranks, the progress (best step, no-progress streak) and goodput's times;
//  - hosting: writes the job's facts to P/state at every round, fenced by its election
//    revision (a deposed host writes nothing and is lost);
//  - after JobFinished: writes it to P/finished before wait_finished's done (the fan-out
//    reads it there), then the host drains its daemon.
// Failures (on_link_lost): etcd unreachable at start (naming the endpoints), the lease lost
// (expired, revoked, etcd unreachable for its TTL), the run id finished, the host's daemon
// unreachable before this node joined it, a refused JOIN, a deposed host.
//
// Threading: the agent's io_context thread; the destructor on that thread once the loop has
// stopped (it revokes the lease: blocking, bounded).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>

#include "agent/config.h"
#include "agent/membership/etcd_settings.h"
#include "agent/membership/membership_link.h"
#include "agent/membership/native_link.h"
#include "agent/run_setup.h"
#include "common/lifetime.h"
#include "etcd/client.h"
#include "etcd/election.h"
#include "etcd/session.h"
#include "proc/death_watch.h"

namespace ddp::agent {

// The death watch's last words for an etcd agent (proc/death_watch.h): the note is this
// agent's lease id, which they revoke (one blocking call, at most 2 s) in the watcher once the
// agent died without revoking it itself.
proc::DeathWatch::LastWords lease_revoker(const EtcdSettings& settings);

class EtcdLink final : public MembershipLink, private LinkEvents {
 public:
  static Result<std::unique_ptr<EtcdLink>> start(boost::asio::io_context& io,
                                                 const AgentConfig& config, const RunSetup& setup,
                                                 EtcdSettings settings,
                                                 proc::DeathWatch* death_watch);
  EtcdLink(boost::asio::io_context& io, const AgentConfig& config, const RunSetup& setup,
           EtcdSettings settings, proc::DeathWatch* death_watch);
  // Once the agent's io_context has stopped: the lease revoked (2 s; 300 ms after etcd was
  // lost), so a host's P/host goes now, not at the lease's expiry.
  ~EtcdLink() override;

  void open(LinkEvents& events) override;
  void send(const rendezvous::membership::Request& request) override;
  rendezvous::Server* worker_store() override { return link_ ? link_->worker_store() : nullptr; }
  void wait_finished(std::function<void()> done) override;
  // Ends the session's keep-alives, the watch and the link to the host; never waits on etcd.
  void close() override;

 private:
  // From the NativeLink to the host.
  void on_payload(const rendezvous::membership::Payload& payload) override;
  void on_reform(const std::string& detail) override;
  void on_link_lost(const Status& why) override;

  boost::asio::awaitable<void> run_open();
  // Drops the link to the host (posted: never from inside its own callback) and seeks again
  // (one seek at a time; a loss during one makes it read the holder again unless it won).
  void host_lost(const std::string& detail);
  boost::asio::awaitable<void> seek();
  // What a daemon of this node resumes from, if it wins: P/state and what this node saw.
  std::optional<rendezvous::membership::ResumePoint> resume_point(const std::string& state) const;
  void write_state();
  // P/spares/<own key> put (a JOIN answered "waiting") or deleted (in a round): `waiting`.
  void mark_spare(bool waiting);
  boost::asio::awaitable<void> write_spare();
  etcd::Txn spare_txn(bool waiting) const;
  // A put of `key` that succeeds only while P/host is still this node's election (fence_).
  etcd::Txn fenced_put(const std::string& key, const std::string& value) const;
  void lost(Status why);

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  const RunSetup& setup_;
  EtcdSettings settings_;
  EtcdKeys keys_;
  std::string addr_;               // advertised: what P/host names when this node hosts
  std::string own_key_;            // this node's key in the job (NodeInfo::node_key)
  etcd::Client client_;            // calls that may wait up to read_timeout
  proc::DeathWatch* death_watch_;  // may be null
  LinkEvents* events_ = nullptr;
  std::unique_ptr<etcd::Session> session_;  // this node's lease, kept alive
  std::int64_t lease_ = 0;                  // session_'s, kept after it closed
  std::optional<etcd::Election> election_;  // for P/host, under lease_
  std::unique_ptr<NativeLink> link_;        // to the current host (this node's own daemon or not)
  bool seeking_ = false;
  bool reseek_ = false;         // the host was lost while seeking
  std::int64_t fence_ = 0;      // P/host's create_revision while this node hosts
  bool joined_ = false;         // the current link's JOIN was accepted
  bool host_was_lost_ = false;  // the next host resumes a job that lost its host
  bool spare_key_ = false;      // P/spares/<own key> should exist
  bool spare_writing_ = false;  // write_spare() runs
  // What this node saw of the job: the next host's resume point when P/state lags.
  std::uint64_t last_round_ = 0;
  std::uint32_t last_restart_count_ = 0;
  std::uint32_t last_world_ = 0;                     // the last round's group world size
  std::optional<std::int64_t> own_best_step_;        // the highest step this node's workers beat
  rendezvous::membership::Duration own_stepping_{};  // this node's in the last round
  std::optional<std::string> finished_value_;        // the JobFinished, encoded, for P/finished
  bool lost_ = false;
  bool closed_ = false;
  Lifetime life_;  // for coroutines in flight
};

}  // namespace ddp::agent
