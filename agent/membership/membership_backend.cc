#include "agent/membership/membership_backend.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "agent/config.h"
#include "agent/run_setup.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

namespace {

// The Round a rendezvous' RoundComplete assigns (the workers' store: group rank 0's).
Round round_of(const rendezvous::membership::RoundComplete& r) {
  Round round;
  round.round = r.round;
  round.restart_count = static_cast<int>(r.restart_count);
  round.group_rank = static_cast<int>(r.group_rank);
  round.group_world_size = static_cast<int>(r.group_world_size);
  round.rank_offset = static_cast<int>(r.rank_offset);
  round.world_size = static_cast<int>(r.world_size);
  round.store_addr = r.store_addr;
  round.store_port = r.store_port;
  return round;
}

// Why a rendezvous' ErrorEvent ends this node's part in the job: kPeerGone (the rendezvous
// removed this node: missed heartbeats or lease, stop timeout) carries its own message; any
// other code is a rendezvous error (e.g. the join timed out).
Status lost_status(const rendezvous::membership::ErrorEvent& e) {
  return Status(e.code,
                e.code == ErrorCode::kPeerGone ? e.message : "rendezvous error: " + e.message);
}

double seconds(membership::Duration d) {
  return std::chrono::duration_cast<std::chrono::duration<double>>(d).count();
}

void report(const membership::Waiting& w) {
  if (w.last_call_left) {
    spdlog::info(
        "waiting for the other nodes: {} of {}..{} joined; the round forms in {:.1f} s "
        "(or at once when {} have joined)",
        w.joined, w.min_nodes, w.max_nodes, seconds(*w.last_call_left), w.max_nodes);
    return;
  }
  spdlog::info(
      "waiting for the other nodes: {} of {} joined; {:.0f} s left before the join timeout "
      "(--rdzv-conf join_timeout)",
      w.joined, w.min_nodes, seconds(w.join_timeout_left));
}

}  // namespace

std::string advertised_addr(const AgentConfig& config, const RunSetup& setup) {
  return config.local_addr.empty() ? setup.hostname : config.local_addr;
}

membership::JoinRequest node_join(const AgentConfig& config, const RunSetup& setup,
                                  const membership::Config& rdzv, std::uint16_t store_port) {
  membership::JoinRequest join;
  join.run_id = setup.group.run_id;
  join.config = rdzv;
  join.node.addr = advertised_addr(config, setup);
  join.node.node_key = join.node.addr + ":" + std::to_string(::getpid());
  join.node.store_port = store_port;
  join.node.local_world_size = static_cast<std::uint32_t>(config.nproc_per_node);
  return join;
}

MembershipBackend::MembershipBackend(boost::asio::io_context& io,
                                     std::unique_ptr<MembershipLink> link)
    : io_(io), link_(std::move(link)), progress_(io) {}

MembershipBackend::~MembershipBackend() { close(); }

void MembershipBackend::join(RendezvousEvents& events) {
  events_ = &events;
  link_->open(*this);
}

void MembershipBackend::on_payload(const membership::Payload& payload) {
  if (quiet()) return;
  if (auto* w = std::get_if<membership::Waiting>(&payload)) {
    if (!first_round_seen_) report(*w);
    return;
  }
  if (auto* j = std::get_if<membership::Joined>(&payload)) {
    if (j->waiting) {
      progress_.cancel();  // admitted at the next round, which its arrival triggers
    } else if (!first_round_seen_) {
      ask_progress_after(2s);
    }
    return;
  }
  if (auto* r = std::get_if<membership::RoundComplete>(&payload)) return on_round(*r);
  if (auto* s = std::get_if<membership::StopWorkers>(&payload)) {
    if (running_round_ && *running_round_ == s->round) stop_told_ = true;
    return events_->on_stop_workers(s->round, s->detail,
                                    s->first_failure && s->first_failure->hung);
  }
  if (auto* f = std::get_if<membership::JobFinished>(&payload)) {
    finished_ = true;
    progress_.cancel();
    return events_->on_job_finished(*f);
  }
  if (auto* g = std::get_if<membership::Straggler>(&payload)) return events_->on_straggler(*g);
  if (auto* e = std::get_if<membership::ErrorEvent>(&payload)) return on_link_lost(lost_status(*e));
}

void MembershipBackend::ask_progress_after(std::chrono::seconds delay) {
  progress_.expires_after(delay);
  progress_.async_wait(life_.guard([this](const boost::system::error_code& ec) {
    if (ec || quiet() || first_round_seen_) return;
    link_->send(membership::QueryWaiting{});
    ask_progress_after(10s);
  }));
}

void MembershipBackend::on_round(const membership::RoundComplete& r) {
  if (held_round_ || (running_round_ && r.round > *running_round_)) {
    // The job formed the next round before this node answered for the running one (or one
    // is held already: the newest is the one to run).
    if (!held_round_ || r.round > held_round_->round) held_round_ = r;
    return stop_running("the job re-formed");
  }
  deliver(r);
}

void MembershipBackend::stop_running(const std::string& detail) {
  if (!running_round_ || stop_told_) return;
  stop_told_ = true;
  events_->on_stop_workers(*running_round_, detail, false);
}

void MembershipBackend::on_reform(const std::string& detail) {
  if (!quiet()) stop_running(detail);
}

void MembershipBackend::deliver(const membership::RoundComplete& r) {
  Round round = round_of(r);
  spdlog::info("round {}: group rank {} of {}, ranks {}..{} of {}, restart {}, worker store {}:{}",
               r.round, r.group_rank, r.group_world_size, r.rank_offset,
               r.rank_offset + r.local_world_size - 1, r.world_size, r.restart_count,
               round.store_addr, round.store_port);
  if (r.group_rank == 0) {
    rendezvous::Server* store = link_->worker_store();
    if (store != nullptr && store_used_) store->reset_store();
    store_used_ = true;
  }
  first_round_seen_ = true;
  progress_.cancel();
  running_round_ = r.round;
  running_nodes_ = r.group_world_size;
  stop_told_ = false;
  events_->on_round(round);
}

void MembershipBackend::answered(std::uint64_t round) {
  if (running_round_ && *running_round_ == round) running_round_.reset();
  if (!held_round_ || running_round_) return;
  boost::asio::post(io_, life_.guard([this] {
    if (quiet() || !held_round_) return;
    auto r = *held_round_;
    held_round_.reset();
    deliver(r);
  }));
}

void MembershipBackend::report_success(std::uint64_t round) {
  if (running_nodes_ > 1) {
    spdlog::info("round {}: all local workers succeeded; waiting for the other nodes", round);
  }
  link_->send(membership::ReportSuccess{round});
  answered(round);
}

void MembershipBackend::report_failure(std::uint64_t round,
                                       std::vector<membership::Failure> failures) {
  link_->send(membership::ReportFailure{round, std::move(failures)});
  answered(round);
}

void MembershipBackend::workers_stopped(std::uint64_t round) {
  link_->send(membership::WorkersStopped{round});
  answered(round);
}

void MembershipBackend::report_progress(membership::Progress progress) {
  link_->send(std::move(progress));
}

void MembershipBackend::leave(const std::string& reason) {
  left_ = true;
  progress_.cancel();
  link_->send(membership::Leave{reason});
}

void MembershipBackend::wait_finished(std::function<void()> done) {
  link_->wait_finished(life_.guard(std::move(done)));
}

void MembershipBackend::on_link_lost(const Status& why) {
  if (closed_ || left_ || lost_) return;
  lost_ = true;
  progress_.cancel();
  events_->on_lost(why);
}

void MembershipBackend::close() {
  if (closed_) return;
  closed_ = true;
  life_.end();
  progress_.cancel();
  link_->close();
}

}  // namespace ddp::agent
