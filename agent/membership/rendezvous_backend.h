// The seam between the agent's policy (agent_machine.h) and a rendezvous: how this node joins
// a job, learns its place in each round, hears that the job wants its workers stopped or is
// over, reports what its workers did, and leaves. One implementation: MembershipBackend
// (membership_backend.h) over a link to the job's membership (membership_link.h): LocalLink
// (one node: its own Job), NativeLink (c10d and static: ddprun's rendezvous daemon, embedded
// or standalone), EtcdLink (etcd).
//
// Contract:
// - join(events) starts joining, asynchronously. From then on the backend delivers, on the
//   agent's io_context thread and never from inside one of its own methods:
//     on_round(r)          this node's place in a new round (ranks, restart count, the workers'
//                          store). Rounds grow strictly; a node gets each round at most once.
//     on_stop_workers(s)   the job stops round s.round on every node (a worker failed on some
//                          node, a node was lost, a node arrived): stop the local workers, then
//                          report. Any number of times per round; duplicates are harmless.
//                          `for_hang`: the earliest failure known is a worker judged hung
//                          (its Failure::hung), so this node's silent workers may be too.
//     on_job_finished(f)   the job is over for every node, with one exit code and root cause.
//                          Delivered at most once; nothing but on_lost may follow.
//     on_lost(why)         this node is out of the job for good: the rendezvous refused it,
//                          timed out its join, removed it (missed heartbeats, a stop timeout, a
//                          persistent straggler; with etcd, its lease expired), or cannot be
//                          reached any more. At most once.
// - Liveness is the backend's business (its link's: membership_link.h). While the backend
//   believes it is a member, the agent assumes it is.
// - report_success/report_failure/workers_stopped answer for one round; at most one of them per
//   round is sent (the agent guarantees it). The job's answer comes as on_round (a restart or a
//   re-rendezvous) or on_job_finished.
// - leave(reason) tells the job this node goes (e.g. SIGTERM); the job decides whether it goes on.
//   No event follows a leave.
// - wait_finished(done): after on_job_finished, calls `done` once every other node could learn
//   the end from this one (e.g. the hosted daemon's other connections closed); at once when this
//   node hosts nothing. The agent bounds the wait with its own timer.
// - close() ends everything the backend holds (connections, hosted servers, timers); no event
//   follows. Idempotent. It runs on the live loop (the agent stops the loop right after), so
//   it never waits on the network: last words that must reach a peer after it (etcd's lease
//   revoke) belong to the destructor, which the agent runs once its loop has stopped.
//
// Threading: the agent's io_context thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

// This node's place in one round, and where the workers' store is.
struct Round {
  std::uint64_t round = 0;
  int restart_count = 0;  // job-global; also the attempt number of the worker logs
  int group_rank = 0;
  int group_world_size = 1;
  int rank_offset = 0;  // global rank of local rank 0
  int world_size = 1;
  std::string store_addr;  // MASTER_ADDR / MASTER_PORT of the workers
  std::uint16_t store_port = 0;
};

class RendezvousEvents {
 public:
  virtual ~RendezvousEvents() = default;
  virtual void on_round(const Round& round) = 0;
  virtual void on_stop_workers(std::uint64_t round, const std::string& detail, bool for_hang) = 0;
  virtual void on_job_finished(const rendezvous::membership::JobFinished& finished) = 0;
  virtual void on_lost(const Status& why) = 0;
  // One of this node's ranks is a straggler (docs/stragglers.md): for the record only.
  virtual void on_straggler(const rendezvous::membership::Straggler& straggler) = 0;
};

class RendezvousBackend {
 public:
  virtual ~RendezvousBackend() = default;
  // `events` must outlive the backend.
  virtual void join(RendezvousEvents& events) = 0;
  virtual void report_success(std::uint64_t round) = 0;
  virtual void report_failure(std::uint64_t round,
                              std::vector<rendezvous::membership::Failure> failures) = 0;
  virtual void workers_stopped(std::uint64_t round) = 0;
  // How far this node's workers of progress.round got (docs/progress.md); before the round's
  // answer, at a rate the agent keeps calm.
  virtual void report_progress(rendezvous::membership::Progress progress) = 0;
  virtual void leave(const std::string& reason) = 0;
  virtual void wait_finished(std::function<void()> done) = 0;
  virtual void close() = 0;
};

}  // namespace ddp::agent
