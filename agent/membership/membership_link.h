// How a node reaches its job's membership (membership_backend.h): a transport carrying
// membership::Request up and membership::Payload down. Implementations: NativeLink (the
// rendezvous daemon over a connection, c10d and static), EtcdLink (etcd elects which agent hosts
// that daemon; a NativeLink reaches it), LocalLink (a single node: the Job in this process).
//
// Contract:
// - open(events) joins the job, asynchronously (the link builds the JoinRequest: it knows its
//   node key, store port and pinned rank). From then on the link tells `events`, on the
//   agent's io_context thread and never from inside one of its own methods:
//     on_payload(p)   a push of the job to this node, in the order the job sent them, once
//                     each; when the join is accepted, a Joined (waiting or not; again after
//                     an on_reform, when the node joined the job's new host).
//     on_reform(d)    the job re-forms without a push saying so (etcd: its host was lost);
//                     the running round, if any, must stop. Any number of times.
//     on_link_lost(s) the link ended for good (unreachable, refused, liveness lost); `s` says
//                     why and the fix. Nothing follows.
// - Liveness is the link's: heartbeats on a connection, or a lease kept alive; a link that can
//   tell its membership ended says so (on_link_lost, or the job's ErrorEvent) within its budget
//   (heartbeat budget, lease TTL). A link that watches keys reads the current state, then
//   watches from the next revision, so no push is missed.
// - send(r) sends one request (reports, Progress, QueryWaiting, Leave); the join was open()'s.
//   Before the join was accepted or after the link ended, a report may be dropped.
// - worker_store(): the workers' store this node serves when it is a round's group rank 0
//   (its own, or the static daemon); null when none.
// - wait_finished(done): after JobFinished, `done` once every other node could learn the end
//   from this one (the hosted daemon drained); posted at once otherwise.
// - close(): ends connections, watches, timers and hosted servers; no event follows; never
//   waits on the network (last words belong to the destructor, run once the loop stopped).
//   Idempotent.
// Threading: the agent's io_context thread.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/server.h"

namespace ddp::agent {

class LinkEvents {
 public:
  virtual ~LinkEvents() = default;
  virtual void on_payload(const rendezvous::membership::Payload& payload) = 0;
  virtual void on_reform(const std::string& detail) = 0;
  virtual void on_link_lost(const Status& why) = 0;
};

class MembershipLink {
 public:
  virtual ~MembershipLink() = default;
  // `events` must outlive the link.
  virtual void open(LinkEvents& events) = 0;
  virtual void send(const rendezvous::membership::Request& request) = 0;
  virtual rendezvous::Server* worker_store() = 0;
  virtual void wait_finished(std::function<void()> done) = 0;
  virtual void close() = 0;
};

// The JoinRequest of this agent's node (node key "ADDR:PID"): the link adds what is its own.
struct AgentConfig;
struct RunSetup;
std::string advertised_addr(const AgentConfig& config, const RunSetup& setup);
rendezvous::membership::JoinRequest node_join(const AgentConfig& config, const RunSetup& setup,
                                              const rendezvous::membership::Config& rdzv,
                                              std::uint16_t store_port);

}  // namespace ddp::agent
