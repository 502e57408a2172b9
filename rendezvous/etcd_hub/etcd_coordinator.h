// The job's membership state machine run by the one agent that won the election
// (docs/etcd.md): a transport to membership::Registry, the daemon's own request dispatch, so
// both transports share one set of rules. Inputs are etcd keys: node keys
// created (JOIN, NodeId = the key's create_revision, so JOIN order is revision order) and
// deleted (lease expired or revoked: a closed connection), and request keys (reports, LEAVE).
// It reads them at a revision R, replays them in order, then watches from R + 1. Outputs are
// event keys per node, written in order in txns of at most 128 puts; the job's durable facts
// (round, restart count, departures) go to P/state with every round, and its end to
// P/finished. A coordinator that takes over resumes the round recorded in P/state and replays
// what happened since it began (etcd_takeover.h); one that finds P/finished re-sends that end
// to every node.
//
// Fencing: every write is a txn that holds only while P/coordinator's create_revision is
// `fence_revision` (the revision of this agent's winning election txn). A coordinator that
// was deposed (its lease expired while it was paused or cut off, and another won) writes
// nothing: its txn fails and it goes to on_fatal with kPeerGone.
//
// Liveness of nodes is their leases only (RegistryOptions::external_liveness).
// Errors it cannot get past (etcd refuses its writes for request_timeout, a watch lost)
// go to on_fatal once; the backend then treats the rendezvous as lost.
//
// Threading: the agent's io_context thread. stop() ends everything; no callback follows.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/lifetime.h"
#include "etcd/client.h"
#include "etcd/watch.h"
#include "rendezvous/etcd_hub/etcd_keys.h"
#include "rendezvous/etcd_hub/etcd_takeover.h"
#include "rendezvous/membership/registry.h"

namespace ddp::rendezvous {

class EtcdCoordinator {
 public:
  EtcdCoordinator(boost::asio::io_context& io, etcd::Client& client, EtcdKeys keys,
                  std::string run_id, std::int64_t lease, std::string own_node_key,
                  std::int64_t fence_revision, std::int64_t gone_revision,
                  std::function<void(Status)> on_fatal);
  // fence_revision: P/coordinator's create_revision, this agent's claim. gone_revision: the
  // revision at which the previous coordinator's key was seen deleted (0: unknown).
  ~EtcdCoordinator();
  EtcdCoordinator(const EtcdCoordinator&) = delete;
  EtcdCoordinator& operator=(const EtcdCoordinator&) = delete;

  void start();
  // `done` once no node but this one is left in the job (the others heard its end and
  // left), at once if so already.
  void when_drained(std::function<void()> done);
  void stop();

 private:
  struct Node {
    std::string key;
    bool gone = false;
  };
  boost::asio::awaitable<void> run();
  boost::asio::awaitable<Status> take_over();
  void on_watch(std::vector<etcd::WatchEvent> events);
  const rendezvous::membership::Job* job() const { return registry_.find(run_id_); }
  void on_node_put(const etcd::KeyValue& kv);
  void on_node_deleted(const std::string& node_key);
  void on_request(const etcd::KeyValue& kv);
  // Resumes the round recorded in P/state with its participants (takeover).
  void resume_running(const JobState& state, const TakeoverPlan& plan,
                      const std::vector<etcd::KeyValue>& nodes);
  void on_participant_gone(const RosterEntry& entry);
  // Events of the Job become writes, in order; the timer is re-armed.
  void deliver(rendezvous::membership::Events events);
  void arm_timer();
  void flush();
  boost::asio::awaitable<void> write_queue();
  void fatal(Status why);
  void check_drained();

  boost::asio::io_context& io_;
  etcd::Client& client_;
  EtcdKeys keys_;
  std::string run_id_;
  std::int64_t lease_;
  std::string own_node_key_;
  std::int64_t fence_revision_;
  std::int64_t gone_revision_;
  std::function<void(Status)> on_fatal_;
  rendezvous::membership::Registry registry_;
  std::optional<rendezvous::membership::JobFinished> finished_;
  std::unordered_map<std::string, rendezvous::membership::NodeId> ids_;  // node key -> id
  std::map<rendezvous::membership::NodeId, Node> nodes_;                 // present, by JOIN order
  std::size_t present_ = 0;
  std::optional<std::uint64_t> resume_round_;
  std::shared_ptr<etcd::Watch> watch_;
  boost::asio::steady_timer timer_;
  std::deque<etcd::Json> writes_;  // txn ops not yet written
  bool writing_ = false;
  std::uint64_t event_seq_ = 0;
  std::uint64_t state_round_ = 0;
  std::function<void()> drained_;
  bool stopped_ = false;
  Lifetime life_;  // last: for coroutines and handlers in flight
};

}  // namespace ddp::rendezvous
