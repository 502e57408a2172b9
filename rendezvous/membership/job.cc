// Job: joining, round completion, heartbeats and deadlines. Stops and the end of the job
// are in job_stop.cc.
#include "rendezvous/membership/job.h"

#include <algorithm>
#include <cstdio>

#include "rendezvous/membership/ranks.h"

namespace ddp::rendezvous::membership {

Job::Job(std::string run_id, Config config, bool pinned_ranks, TimePoint now)
    : run_id_(std::move(run_id)),
      config_(config),
      pinned_ranks_(pinned_ranks),
      now_(now),
      join_deadline_(now + config.join_timeout),
      steps_(config),
      created_at_(now),
      forming_since_(now) {}

void Job::advance(TimePoint now) { now_ = std::max(now_, now); }

void Job::touch(NodeId id, Member& m) {
  const TimePoint expires = now_ + config_.heartbeat_budget();
  if (m.expires == expires) return;
  m.expires = expires;
  expiries_.emplace_back(expires, id);
}

Job::Member* Job::heard_from(NodeId id, TimePoint now) {
  advance(now);
  auto it = members_.find(id);
  if (it == members_.end()) return nullptr;
  touch(id, it->second);
  return &it->second;
}

void Job::trim_heartbeats() {
  while (!expiries_.empty()) {
    auto it = members_.find(expiries_.front().second);
    if (it != members_.end() && it->second.expires == expiries_.front().first) break;
    expiries_.pop_front();
    ++visits_;
  }
}

std::string Job::pinned_rank_error(const NodeInfo& info,
                                   std::optional<std::uint32_t> node_rank) const {
  const std::string n = std::to_string(config_.max_nodes);
  if (!pinned_ranks_ && node_rank) {
    return "node " + info.node_key + " joins job '" + run_id_ + "' with node rank " +
           std::to_string(*node_rank) +
           " (static rendezvous), but the job's nodes get their ranks assigned (c10d); pass "
           "the same --rdzv-backend on every node, or use another --rdzv-id";
  }
  if (pinned_ranks_ && !node_rank) {
    return "node " + info.node_key + " joins job '" + run_id_ +
           "' without a node rank, but the job's nodes pin theirs (static rendezvous); pass "
           "--rdzv-backend static --node-rank 0.." +
           std::to_string(config_.max_nodes - 1) + " on every node, or use another --rdzv-id";
  }
  if (!node_rank) return {};
  if (*node_rank >= config_.max_nodes) {
    return "node " + info.node_key + " asks for node rank " + std::to_string(*node_rank) +
           " but job '" + run_id_ + "' has " + n + " nodes; pass --node-rank 0.." +
           std::to_string(config_.max_nodes - 1);
  }
  if (auto holder = rank_holders_.find(*node_rank); holder != rank_holders_.end()) {
    return "node rank " + std::to_string(*node_rank) + " of job '" + run_id_ +
           "' is already taken by node " + members_.at(holder->second).info.node_key + "; node " +
           info.node_key + " must pass a --node-rank no other node uses (0.." +
           std::to_string(config_.max_nodes - 1) + ", one per node)";
  }
  return {};
}

void Job::join(NodeId id, NodeInfo info, std::optional<std::uint32_t> node_rank, TimePoint now,
               Events& out) {
  advance(now);
  if (state_ == State::kFinished) {
    out.push_back({id, ErrorEvent{ErrorCode::kJobFinished,
                                  "job '" + run_id_ + "' finished (" + finish_reason_ +
                                      "); start a new job with a different --rdzv-id"}});
    return;
  }
  if (members_.count(id) != 0) {
    out.push_back({id, ErrorEvent{ErrorCode::kInvalidArgument,
                                  "this connection already joined job '" + run_id_ +
                                      "'; send JOIN once per connection"}});
    return;
  }
  if (std::string error = pinned_rank_error(info, node_rank); !error.empty()) {
    out.push_back({id, ErrorEvent{ErrorCode::kInvalidArgument, std::move(error)}});
    return;
  }
  Member& m = members_[id];
  m.info = std::move(info);
  m.pinned_rank = node_rank;
  if (node_rank) rank_holders_[*node_rank] = id;
  m.join_seq = next_join_seq_++;
  if (auto r = resume_ranks_.find(m.info.node_key); r != resume_ranks_.end()) {
    m.prev_group_rank = r->second;
    ++survivors_back_;
  }
  m.joined_at = now_;
  touch(id, m);
  if (state_ == State::kPending) {
    m.role = Role::kPending;
    ++pending_count_;
    out.push_back({id, Joined{round_, false}});
    after_pending_change(out);
  } else {
    m.role = Role::kWaiting;
    ++waiting_count_;
    out.push_back({id, Joined{round_ + 1, true}});
    // Pinned ranks: a free rank while running means its node already succeeded and left;
    // rerunning everyone for it would also reuse the restart count (and the workers'
    // /worker/attempt_<n> keys on the static store), so the newcomer just waits.
    if (state_ == State::kRunning && participant_count_ < config_.max_nodes && !pinned_ranks_) {
      begin_stop(StopReason::kNodeJoined, /*counts=*/false,
                 "node " + m.info.node_key + " joined; restarting to admit it", out);
    }
  }
  trim_heartbeats();
}

void Job::heartbeat(NodeId id, TimePoint now) {
  if (heard_from(id, now) != nullptr) trim_heartbeats();
}

void Job::pardon(TimePoint now) {
  advance(now);
  for (auto& [id, m] : members_) {
    ++visits_;
    touch(id, m);
  }
  trim_heartbeats();
}

void Job::query_waiting(NodeId id, TimePoint now, Events& out) {
  const Member* m = heard_from(id, now);
  if (m == nullptr) return;
  if (state_ == State::kPending && m->role == Role::kPending) {
    Waiting w;
    w.joined = static_cast<std::uint32_t>(pending_count_);
    w.min_nodes = config_.min_nodes;
    w.max_nodes = config_.max_nodes;
    w.join_timeout_left =
        std::max(Duration(0), std::chrono::duration_cast<Duration>(join_deadline_ - now_));
    if (last_call_) {
      w.last_call_left =
          std::max(Duration(0), std::chrono::duration_cast<Duration>(*last_call_ - now_));
    }
    out.push_back({id, w});
  }
  trim_heartbeats();
}

void Job::progress(NodeId id, std::uint64_t round, Duration stepping,
                   const std::vector<RankProgress>& ranks, TimePoint now, Events& out) {
  const Member* m = heard_from(id, now);
  if (m == nullptr) return;
  bool exclude = false;
  if (round == round_ && m->role == Role::kParticipant &&
      (state_ == State::kRunning || state_ == State::kStopping)) {
    const std::uint64_t end = m->rank_offset + m->info.local_world_size;
    for (const RankProgress& p : steps_.report(m->rank_offset, end, stepping, ranks, now_)) {
      exclude = config_.exclude_straggler && state_ == State::kRunning;
      out.push_back({id, Straggler{round_, p.rank, p.step_time, steps_.median(),
                                   config_.straggler_reports, exclude}});
    }
  }
  if (exclude) {
    char factor[32];  // "2", "1.5": at most 3 decimals (Config), no trailing zeros
    std::snprintf(factor, sizeof factor, "%g", config_.straggler_factor_milli / 1000.0);
    remove_node(id, GoneReason::kStraggler,
                std::string("step time over ") + factor + "x the median in " +
                    std::to_string(config_.straggler_reports) +
                    " reports in a row; exclude_straggler is on",
                now_, out);
  }
  trim_heartbeats();
}

Goodput Job::goodput(TimePoint now) const {
  const TimePoint end = state_ == State::kFinished ? finished_at_ : std::max(now, now_);
  return {steps_.stepping(), std::chrono::duration_cast<Duration>(end - created_at_)};
}

void Job::resume(const ResumePoint& at) {
  round_ = at.round;
  restart_count_ = at.restart_count;
  departures_ = at.departures;
  expected_nodes_ = at.expected_nodes;
  spares_ = at.spares;
  for (std::uint32_t rank = 0; rank < at.ranks.size(); ++rank) {
    if (!at.ranks[rank].empty()) resume_ranks_[at.ranks[rank]] = rank;
  }
  steps_.resume(at.best_step, at.no_progress_restarts, at.stepping);
  created_at_ = now_ - at.age;
}

ResumePoint Job::resume_point(TimePoint now) const {
  ResumePoint at{.round = round_ + 1,
                 .restart_count = restart_count_,
                 .departures = departures_,
                 .best_step = steps_.best_step(),
                 .no_progress_restarts = steps_.no_progress_restarts(),
                 .stepping = steps_.stepping_before(),
                 .age = goodput(now).wall};
  at.ranks.reserve(roster_.size());
  for (NodeId id : roster_) {
    auto it = members_.find(id);
    at.ranks.push_back(it == members_.end() ? std::string() : it->second.info.node_key);
  }
  return at;
}

void Job::after_pending_change(Events& out) {
  // Resumed: the expected survivors first (by key when known: a spare must not take a late
  // survivor's place at MAX); the last call still forms the round without a lost one.
  // Then the spares that were waiting, up to MAX.
  const std::size_t back = resume_ranks_.empty() ? pending_count_ : survivors_back_;
  const bool awaited = expected_nodes_ != 0 && back < expected_nodes_;
  const std::size_t wanted = std::min<std::size_t>(
      config_.max_nodes, std::max<std::size_t>(config_.min_nodes, expected_nodes_ + spares_));
  if (!awaited &&
      (pending_count_ >= config_.max_nodes || (expected_nodes_ != 0 && pending_count_ >= wanted))) {
    complete_round(out);
  } else if (pending_count_ >= config_.min_nodes) {
    if (!last_call_) last_call_ = now_ + config_.last_call_timeout;
  } else {
    last_call_.reset();
  }
}

void Job::complete_round(Events& out) {
  expected_nodes_ = 0;
  spares_ = 0;
  resume_ranks_.clear();
  std::vector<RankCandidate> candidates;
  candidates.reserve(pending_count_);
  for (auto& [id, m] : members_) {
    ++visits_;
    if (m.role == Role::kPending) {
      candidates.push_back(
          {id, m.prev_group_rank, m.join_seq, m.info.local_world_size, m.pinned_rank});
    }
  }
  RankPlan plan = plan_ranks(std::move(candidates), config_.max_nodes);
  for (NodeId id : plan.left_out) {
    ++visits_;
    Member& m = members_.at(id);
    m.role = Role::kWaiting;
    m.prev_group_rank.reset();
  }
  state_ = State::kRunning;
  last_call_.reset();
  close_failures();
  steps_.new_round();
  ++counters_.rounds_completed;
  counters_.last_round_latency = std::chrono::duration_cast<Duration>(now_ - forming_since_);
  round_completed_at_ = now_;
  world_size_ = plan.world_size;
  pending_count_ = 0;
  waiting_count_ += plan.left_out.size();
  participant_count_ = plan.admitted.size();
  succeeded_count_ = 0;
  stopped_count_ = 0;
  const NodeInfo& host = members_.at(plan.admitted.front()).info;
  const std::string store_addr = host.addr;
  const std::uint16_t store_port = host.store_port;
  const auto group_world_size = static_cast<std::uint32_t>(plan.admitted.size());
  roster_ = plan.admitted;
  for (std::uint32_t rank = 0; rank < group_world_size; ++rank) {
    const NodeId id = plan.admitted[rank];
    ++visits_;
    Member& m = members_.at(id);
    m.role = Role::kParticipant;
    m.group_rank = rank;
    m.rank_offset = plan.rank_offset[rank];
    m.prev_group_rank.reset();
    m.succeeded = false;
    m.stopped = false;
    out.push_back(
        {id, RoundComplete{round_, restart_count_, rank, group_world_size, m.info.local_world_size,
                           plan.rank_offset[rank], plan.world_size, store_addr, store_port}});
  }
}

std::optional<TimePoint> Job::next_deadline() const {
  if (state_ == State::kFinished) return std::nullopt;
  std::optional<TimePoint> next;
  auto consider = [&next](TimePoint t) {
    if (!next || t < *next) next = t;
  };
  if (!expiries_.empty()) consider(expiries_.front().first);
  if (state_ == State::kPending) {
    consider(join_deadline_);
    if (last_call_) consider(*last_call_);
  }
  if (state_ == State::kStopping) consider(stop_deadline_);
  return next;
}

void Job::on_deadline(TimePoint now, Events& out) {
  advance(now);
  while (state_ != State::kFinished && !expiries_.empty() && expiries_.front().first <= now_) {
    const auto [expires, id] = expiries_.front();
    expiries_.pop_front();
    ++visits_;
    auto it = members_.find(id);
    if (it == members_.end() || it->second.expires != expires) continue;
    remove_node(id, GoneReason::kHeartbeatMissed,
                "no message for " + std::to_string(config_.heartbeat_budget().count()) + "ms", now_,
                out);
  }
  if (state_ == State::kPending) {
    if ((last_call_ && *last_call_ <= now_) ||
        (join_deadline_ <= now_ && pending_count_ >= config_.min_nodes)) {
      complete_round(out);
    } else if (join_deadline_ <= now_) {
      const std::string message =
          "rendezvous of job '" + run_id_ + "' timed out after join_timeout " +
          std::to_string(config_.join_timeout.count()) + "ms with " +
          std::to_string(pending_count_) + " of min " + std::to_string(config_.min_nodes) +
          " nodes; start the missing nodes or raise --rdzv-conf join_timeout";
      for (const auto& [id, m] : members_) {
        ++visits_;
        out.push_back({id, ErrorEvent{ErrorCode::kTimeout, message}});
      }
      count_failure(FailureCause::kJoinTimeout);
      finish(false, message, /*notify=*/false, out);
    }
  }
  if (state_ == State::kStopping && stop_deadline_ <= now_) {
    std::vector<NodeId> late;
    for_each_participant([&late](NodeId id, Member& m) {
      if (!m.stopped) late.push_back(id);
    });
    for (NodeId id : late) {
      if (state_ != State::kStopping) break;
      remove_node(id, GoneReason::kStopTimeout,
                  "workers not reported stopped within close_timeout " +
                      std::to_string(config_.close_timeout.count()) + "ms",
                  now_, out);
    }
  }
  trim_heartbeats();
}

}  // namespace ddp::rendezvous::membership
