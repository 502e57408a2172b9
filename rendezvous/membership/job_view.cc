// Job::view() and the names of the observer vocabulary (job_view.h).
#include "rendezvous/membership/job_view.h"

#include <algorithm>

#include "rendezvous/membership/job.h"

namespace ddp::rendezvous::membership {

std::string_view cause_name(FailureCause cause) {
  switch (cause) {
    case FailureCause::kWorkerFailed:
      return "worker_failed";
    case FailureCause::kNodeLeft:
      return "node_left";
    case FailureCause::kConnectionClosed:
      return "connection_closed";
    case FailureCause::kHeartbeatMissed:
      return "heartbeat_missed";
    case FailureCause::kStopTimeout:
      return "stop_timeout";
    case FailureCause::kJoinTimeout:
      return "join_timeout";
  }
  return "unknown";
}

std::string_view state_name(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kStopping:
      return "stopping";
    case JobState::kFinished:
      return "finished";
  }
  return "unknown";
}

std::string_view role_name(NodeView::Role role) {
  switch (role) {
    case NodeView::Role::kPending:
      return "pending";
    case NodeView::Role::kParticipant:
      return "participant";
    case NodeView::Role::kWaiting:
      return "waiting";
    case NodeView::Role::kSpare:
      return "spare";
  }
  return "unknown";
}

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kWorkerFailed:
      return "worker_failed";
    case StopReason::kNodeLost:
      return "node_lost";
    case StopReason::kNodeJoined:
      return "node_joined";
  }
  return "unknown";
}

void LatencyHistogram::observe(Duration latency) {
  const double seconds = std::chrono::duration<double>(latency).count();
  ++count;
  sum_seconds += seconds;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) {
      ++buckets[i];
      return;
    }
  }
}

JobView Job::view(bool full) const {
  JobView v;
  v.run_id = run_id_;
  v.state = state_;
  v.round = round_;
  v.restart_count = restart_count_;
  v.config = config_;
  v.pinned_ranks = pinned_ranks_;
  v.created_at = created_at_;
  v.round_completed_at = round_completed_at_;
  v.last_stop = last_stop_;
  v.counters = counters_;
  v.steps = steps_.view();
  v.node_count = members_.size();
  v.world_size = world_size_;
  if (state_ == State::kFinished) {
    v.finished_at = finished_at_;
    v.exit_code = exit_code_;
    v.finish_reason = finish_reason_;
    v.root_cause = root_cause_;
  }
  v.failed_worker_count = failures_.empty() ? last_failure_count_ : failures_.size();
  if (!full) return v;
  v.failed_workers = failures_.empty() ? last_failures_ : diagnosed_failures();
  const auto waiting =
      participant_count_ >= config_.max_nodes ? NodeView::Role::kSpare : NodeView::Role::kWaiting;
  auto to_view = [waiting](const Member& m) {
    NodeView n;
    n.info = m.info;
    n.role = m.role == Role::kParticipant ? NodeView::Role::kParticipant
             : m.role == Role::kWaiting   ? waiting
                                          : NodeView::Role::kPending;
    n.succeeded = m.succeeded;
    n.joined_at = m.joined_at;
    return n;
  };
  v.nodes.reserve(members_.size());
  for (NodeId id : roster_) {  // this round's participants by group rank
    auto it = members_.find(id);
    if (it == members_.end() || it->second.role != Role::kParticipant) continue;
    NodeView n = to_view(it->second);
    n.group_rank = it->second.group_rank;
    n.rank_offset = it->second.rank_offset;
    v.nodes.push_back(std::move(n));
  }
  std::vector<std::pair<std::uint64_t, const Member*>> others;
  for (const auto& [id, m] : members_) {
    if (m.role != Role::kParticipant) others.emplace_back(m.join_seq, &m);
  }
  std::sort(others.begin(), others.end());
  for (const auto& [seq, m] : others) v.nodes.push_back(to_view(*m));
  return v;
}

}  // namespace ddp::rendezvous::membership
