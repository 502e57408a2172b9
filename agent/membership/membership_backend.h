// The agent's one rendezvous backend (rendezvous_backend.h), over any transport to the job's
// membership (membership_link.h: native daemon, etcd, or a single node's own Job). What every
// transport shares lives here:
//  - the pushes: Joined starts the join progress until the first round (after 2 s and then
//    every 10 s a QueryWaiting, whose Waiting answer is logged: "waiting for the other nodes:
//    1 of 2 joined; 588 s left before the join timeout"; a round that forms at once prints
//    nothing; a calm rate and an O(1) question rather than a push to every node per join),
//    RoundComplete becomes on_round (with its log line), StopWorkers
//    on_stop_workers, JobFinished on_job_finished (then nothing but on_lost), Straggler
//    on_straggler, ErrorEvent on_lost (kPeerGone with the job's message, else "rendezvous
//    error: ...");
//  - the held round: a round newer than the running one that this node has not answered yet
//    (a re-formed job: a new host, or a push racing the stop) is held until this node
//    answered, and the running round gets one stop; on_reform stops the running round once;
//  - the workers' store: when this node is a round's group rank 0 the store it serves is
//    emptied for every round after its first (Server::reset_store), so no worker of a new
//    attempt sees an earlier attempt's keys (the job starts a round only after every worker of
//    the last one was reaped);
//  - on_lost at most once; no event after leave() or close(); "waiting for the other nodes"
//    after a success only when the round has other nodes.
//
// Threading: the agent's io_context thread. The link is destroyed with the backend, after
// close(): the agent destroys its backend once its loop stopped (etcd's lease revoke).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>

#include "agent/membership/membership_link.h"
#include "agent/membership/rendezvous_backend.h"
#include "common/lifetime.h"

namespace ddp::agent {

class MembershipBackend final : public RendezvousBackend, private LinkEvents {
 public:
  MembershipBackend(boost::asio::io_context& io, std::unique_ptr<MembershipLink> link);
  ~MembershipBackend() override;

  void join(RendezvousEvents& events) override;
  void report_success(std::uint64_t round) override;
  void report_failure(std::uint64_t round,
                      std::vector<rendezvous::membership::Failure> failures) override;
  void workers_stopped(std::uint64_t round) override;
  void report_progress(rendezvous::membership::Progress progress) override;
  void leave(const std::string& reason) override;
  void wait_finished(std::function<void()> done) override;
  void close() override;

 private:
  void on_payload(const rendezvous::membership::Payload& payload) override;
  void on_reform(const std::string& detail) override;
  void on_link_lost(const Status& why) override;
  void on_round(const rendezvous::membership::RoundComplete& r);
  void deliver(const rendezvous::membership::RoundComplete& r);
  void answered(std::uint64_t round);
  void stop_running(const std::string& detail);
  void ask_progress_after(std::chrono::seconds delay);
  bool quiet() const { return closed_ || left_ || lost_ || finished_; }

  boost::asio::io_context& io_;
  std::unique_ptr<MembershipLink> link_;
  RendezvousEvents* events_ = nullptr;
  boost::asio::steady_timer progress_;          // until the first round: when to ask how far it is
  std::optional<std::uint64_t> running_round_;  // delivered, not answered yet
  std::uint32_t running_nodes_ = 0;             // the last round's group world size
  bool stop_told_ = false;                      // on_stop_workers given for running_round_
  std::optional<rendezvous::membership::RoundComplete> held_round_;
  bool first_round_seen_ = false;
  bool store_used_ = false;  // the workers' store served a round already
  bool finished_ = false;
  bool lost_ = false;
  bool left_ = false;  // no event follows a leave
  bool closed_ = false;
  Lifetime life_;
};

}  // namespace ddp::agent
