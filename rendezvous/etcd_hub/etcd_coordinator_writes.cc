// EtcdCoordinator's output side: the Job's events and durable facts as etcd writes, batched
// into fenced txns, and the drain that lets the coordinating agent leave last
// (contracts in etcd_coordinator.h).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>

#include "rendezvous/etcd_hub/etcd_coordinator.h"
#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous {
namespace {

namespace asio = boost::asio;
namespace membership = rendezvous::membership;

constexpr std::size_t kOpsPerTxn = 128;  // etcd's limit

}  // namespace

void EtcdCoordinator::deliver(membership::Events events) {
  for (auto& e : events) {
    auto n = nodes_.find(e.to);
    if (auto* f = std::get_if<membership::JobFinished>(&e.payload); f && !finished_) {
      finished_ = *f;
      writes_.push_back(etcd::op_put(keys_.finished(), membership::encode_push(*f)));
    }
    const membership::Job* job = this->job();
    if (std::holds_alternative<membership::RoundComplete>(e.payload) && job &&
        job->round() != state_round_) {
      state_round_ = job->round();
      JobState facts{job->round(), job->restart_count(), job->departures(), {}, 0};
      for (membership::NodeId id : job->roster()) {
        if (auto p = nodes_.find(id); p != nodes_.end())
          facts.roster.push_back({p->second.key, id});
      }
      writes_.push_back(etcd::op_put(keys_.state(), encode_job_state(facts)));
    }
    if (n == nodes_.end()) continue;  // gone meanwhile
    char id[48];
    std::snprintf(id, sizeof id, "%016llx-%012llu", static_cast<unsigned long long>(lease_),
                  static_cast<unsigned long long>(++event_seq_));
    writes_.push_back(
        etcd::op_put(keys_.events(n->second.key) + id, membership::encode_push(e.payload), lease_));
  }
  flush();
  arm_timer();
}

void EtcdCoordinator::flush() {
  if (writing_ || writes_.empty() || stopped_) return;
  writing_ = true;
  asio::co_spawn(io_, write_queue(), asio::detached);
}

asio::awaitable<void> EtcdCoordinator::write_queue() {
  auto alive = life_.watch();
  while (!writes_.empty()) {
    etcd::Txn txn;
    while (!writes_.empty() && txn.success.size() < kOpsPerTxn) {
      txn.success.push_back(std::move(writes_.front()));
      writes_.pop_front();
    }
    // The fence: only while P/coordinator is still this agent's claim.
    txn.compare.push_back(etcd::compare_create_revision(keys_.coordinator(), fence_revision_));
    auto r = co_await client_.txn(std::move(txn));
    if (!alive) co_return;
    // A refused fence, or a put under this agent's lease after it expired: deposed.
    if (r ? !r->succeeded : r.status().code() == ErrorCode::kNotFound) {
      writing_ = false;
      fatal(peer_gone("this agent no longer coordinates job '" + run_id_ + "': its claim on " +
                      keys_.coordinator() +
                      " is gone (its etcd lease expired while it was paused or cut off) and "
                      "another agent took over; its writes are refused"));
      co_return;
    }
    if (!r) {
      writing_ = false;
      fatal(Status(r.status().code(), "cannot write the job's events: " + r.status().message()));
      co_return;
    }
  }
  writing_ = false;
  check_drained();
}

void EtcdCoordinator::when_drained(std::function<void()> done) {
  drained_ = std::move(done);
  check_drained();
}

void EtcdCoordinator::check_drained() {
  if (!drained_) return;
  const bool only_me = present_ == 0 || (present_ == 1 && ids_.count(own_node_key_) == 1);
  if (!only_me || writing_ || !writes_.empty()) return;
  auto done = std::move(drained_);
  drained_ = nullptr;
  asio::post(io_, std::move(done));
}

}  // namespace ddp::rendezvous
