// Job: failures, lost nodes, stopping a round, restarting it, and the end of the job.
#include <algorithm>
#include <tuple>

#include "common/signal_name.h"
#include "rendezvous/membership/job.h"

namespace ddp::rendezvous::membership {

const std::string* Job::removal(NodeId id) const {
  auto it = removed_.find(id);
  return it == removed_.end() ? nullptr : &it->second;
}

std::string Job::describe(const Member& m) const {
  std::string text = "node " + m.info.node_key;
  if (m.role == Role::kParticipant) text += " (group rank " + std::to_string(m.group_rank) + ")";
  return text;
}

std::int32_t failure_exit_code(const std::optional<Failure>& root_cause) {
  if (!root_cause) return 1;
  const std::int32_t code = root_cause->exit_code;
  if (code > 0 && code < 256) return code;
  if (code < 0 && code > -128) return 128 - code;
  return 1;
}

namespace {

bool earlier(const Failure& a, const Failure& b) {
  return std::tie(a.time, a.rank) < std::tie(b.time, b.rank);
}

}  // namespace

void RootPick::add(const std::vector<Failure>& failures, std::size_t index) {
  const Failure& f = failures[index];
  if (f.hung) {
    auto stalled_before = [](const Failure& a, const Failure& b) {
      return std::make_tuple(a.step.value_or(-1), a.time, a.rank) <
             std::make_tuple(b.step.value_or(-1), b.time, b.rank);
    };
    if (!hung_ || stalled_before(f, failures[*hung_])) hung_ = index;
  } else if (!other_ || earlier(f, failures[*other_])) {
    other_ = index;
  }
}

std::optional<std::size_t> RootPick::root(const std::vector<Failure>& failures) const {
  if (hung_ && (!other_ || earlier(failures[*hung_], failures[*other_]))) return hung_;
  return other_;
}

std::optional<Failure> root_cause_of(const std::vector<Failure>& failures) {
  RootPick pick;
  for (std::size_t i = 0; i < failures.size(); ++i) pick.add(failures, i);
  const auto root = pick.root(failures);
  if (!root) return std::nullopt;
  return failures[*root];
}

std::optional<Failure> Job::earliest_failure() const {
  const auto root = pick_.root(failures_);
  if (!root) return std::nullopt;
  return failures_[*root];
}

void Job::add_failure(Failure f) {
  const std::optional<std::size_t> root_before = pick_.root(failures_);
  failures_.push_back(std::move(f));
  const std::size_t i = failures_.size() - 1;
  pick_.add(failures_, i);
  const bool root = pick_.root(failures_) == i;
  if (i >= kDiagnosedFailures && !root) failures_[i].diagnosis = {};
  if (root && root_before && *root_before >= kDiagnosedFailures) {
    failures_[*root_before].diagnosis = {};  // it kept its diagnosis only as the root cause
  }
}

std::vector<Failure> Job::diagnosed_failures() const {
  const std::size_t n = std::min(failures_.size(), kDiagnosedFailures);
  std::vector<Failure> out(failures_.begin(), failures_.begin() + static_cast<std::ptrdiff_t>(n));
  if (const auto root = pick_.root(failures_); root && *root >= n) out.push_back(failures_[*root]);
  return out;
}

void Job::close_failures() {
  if (!failures_.empty()) {
    last_failures_ = diagnosed_failures();
    last_failure_count_ = failures_.size();
  }
  failures_.clear();
  pick_ = {};
}

void Job::report_failure(NodeId id, std::uint64_t round, std::vector<Failure> failures,
                         TimePoint now, Events& out) {
  Member* m = heard_from(id, now);
  if (m == nullptr) return;
  if (round == round_ && m->role == Role::kParticipant &&
      (state_ == State::kRunning || state_ == State::kStopping)) {
    const std::size_t reported = failures_.size();  // this report's failures start here
    for (Failure& f : failures) {
      f.node_key = m->info.node_key;
      f.group_rank = m->group_rank;
      add_failure(std::move(f));
    }
    mark_stopped(*m);
    if (state_ == State::kStopping && outcome_ != Outcome::kFail) {
      refuse_restart_if_stuck(reported, finish_reason_);
    }
    if (state_ == State::kRunning) {
      std::string detail = describe(*m) + " reported a worker failure";
      if (auto first = earliest_failure()) {
        detail = "worker rank " + std::to_string(first->rank) + " on node " + first->node_key +
                 " (group rank " + std::to_string(first->group_rank) + ") failed with exit code " +
                 describe_exit_code(first->exit_code);
      }
      begin_stop(StopReason::kWorkerFailed, /*counts=*/true, std::move(detail), out);
    } else {
      maybe_finish_stop(out);
    }
  }
  trim_heartbeats();
}

void Job::workers_stopped(NodeId id, std::uint64_t round, TimePoint now, Events& out) {
  Member* m = heard_from(id, now);
  if (m == nullptr) return;
  if (state_ == State::kStopping && round == round_ && m->role == Role::kParticipant) {
    mark_stopped(*m);
    maybe_finish_stop(out);
  }
  trim_heartbeats();
}

void Job::report_success(NodeId id, std::uint64_t round, TimePoint now, Events& out) {
  Member* m = heard_from(id, now);
  if (m == nullptr) return;
  if (round == round_ && m->role == Role::kParticipant && !m->succeeded) {
    if (state_ == State::kRunning) {
      m->succeeded = true;
      ++succeeded_count_;
      if (succeeded_count_ == participant_count_) {
        finish(true, "every worker on every node exited 0", /*notify=*/true, out);
      }
    } else if (state_ == State::kStopping) {
      mark_stopped(*m);  // its workers are down: that is all a stop needs
      maybe_finish_stop(out);
    }
  }
  trim_heartbeats();
}

void Job::remove_node(NodeId id, GoneReason why, const std::string& why_text, TimePoint now,
                      Events& out) {
  advance(now);
  auto it = members_.find(id);
  if (it == members_.end() || state_ == State::kFinished) return;
  const Member m = std::move(it->second);
  members_.erase(it);
  if (m.pinned_rank) rank_holders_.erase(*m.pinned_rank);
  const char* how = why == GoneReason::kLeft               ? "left"
                    : why == GoneReason::kConnectionClosed ? "closed its connection"
                    : why == GoneReason::kHeartbeatMissed  ? "missed its heartbeats"
                    : why == GoneReason::kStraggler        ? "was a persistent straggler"
                                                           : "did not stop its workers";
  std::string detail = describe(m) + " " + how;
  if (why == GoneReason::kHeartbeatMissed) {
    count_failure(FailureCause::kHeartbeatMissed);
  } else if (why == GoneReason::kStopTimeout) {
    count_failure(FailureCause::kStopTimeout);
  } else if (m.role == Role::kParticipant && !m.succeeded && state_ == State::kRunning) {
    count_failure(why == GoneReason::kLeft ? FailureCause::kNodeLeft
                                           : FailureCause::kConnectionClosed);
  }
  if (!why_text.empty()) detail += " (" + why_text + ")";
  if (why == GoneReason::kHeartbeatMissed || why == GoneReason::kStopTimeout ||
      why == GoneReason::kStraggler) {
    std::string told = "the rendezvous removed this node from job '" + run_id_ + "': " + detail;
    told += why == GoneReason::kHeartbeatMissed
                ? "; an agent stopped or cut off for longer than keep_alive_interval x "
                  "keep_alive_max_attempt is removed: start it again to rejoin, or raise "
                  "--rdzv-conf keep_alive_max_attempt"
            : why == GoneReason::kStraggler
                ? "; --exclude-straggler removes such a node (a spare takes its place): check "
                  "this machine, or raise --straggler-factor"
                : "; raise --rdzv-conf close_timeout above --shutdown-timeout";
    out.push_back({id, ErrorEvent{ErrorCode::kPeerGone, told}});
    removed_[id] = std::move(told);
  }
  switch (m.role) {
    case Role::kPending:
      --pending_count_;
      if (m.prev_group_rank && !resume_ranks_.empty()) --survivors_back_;
      after_pending_change(out);
      break;
    case Role::kWaiting:
      --waiting_count_;
      break;
    case Role::kParticipant:
      --participant_count_;
      if (m.stopped) --stopped_count_;
      if (m.succeeded) {
        // Its part is done: not a loss. The others may still succeed without it.
        --succeeded_count_;
        if (state_ == State::kRunning && succeeded_count_ == participant_count_) {
          finish(true, "every worker on every node exited 0", /*notify=*/true, out);
        }
      } else if (state_ == State::kRunning) {
        const bool counts = departures_ >= config_.max_nodes;
        ++departures_;
        if (counts) {
          detail += "; departures after the first " + std::to_string(config_.max_nodes) +
                    " count as restarts";
        }
        begin_stop(StopReason::kNodeLost, counts, std::move(detail), out);
      } else if (state_ == State::kStopping) {
        maybe_finish_stop(out);
      }
      break;
  }
  trim_heartbeats();
}

void Job::begin_stop(StopReason reason, bool counts, std::string detail, Events& out) {
  state_ = State::kStopping;
  stop_deadline_ = now_ + config_.close_timeout;
  outcome_ = Outcome::kRestart;
  forming_since_ = now_;
  stop_counts_ = counts;
  if (reason == StopReason::kWorkerFailed) count_failure(FailureCause::kWorkerFailed);
  // A stuck worker ends the job with this stop (outcome kFail): the restart count stays.
  const bool stuck = refuse_restart_if_stuck(0, detail);
  if (counts && !stuck) {
    if (restart_count_ < config_.max_restarts) {
      ++restart_count_;
      ++counters_.restarts;
    } else {
      outcome_ = Outcome::kFail;
      detail += "; no restarts left (max_restarts " + std::to_string(config_.max_restarts) + ")";
    }
  }
  finish_reason_ = detail;
  const std::optional<Failure> first = earliest_failure();
  last_stop_ = StopView{reason, detail, first, now_};
  std::optional<Failure> told = first;  // without its diagnosis: this goes to every node
  if (told) told->diagnosis = {};
  for_each_participant([&](NodeId id, Member& m) {
    if (m.succeeded) mark_stopped(m);  // nothing left to stop there
    out.push_back({id, StopWorkers{round_, reason, detail, told}});
  });
  maybe_finish_stop(out);
}

bool Job::refuse_restart_if_stuck(std::size_t from, std::string& detail) {
  for (std::size_t i = from; i < failures_.size(); ++i) {
    const Failure& f = failures_[i];
    ++visits_;
    if (!f.no_restart) continue;
    outcome_ = Outcome::kFail;
    detail += "; no restart: worker rank " + std::to_string(f.rank) + " on node " + f.node_key +
              " is stuck (it may still hold its devices)";
    return true;
  }
  return false;
}

void Job::mark_stopped(Member& m) {
  if (m.stopped) return;
  m.stopped = true;
  ++stopped_count_;
}

void Job::maybe_finish_stop(Events& out) {
  if (state_ != State::kStopping || stopped_count_ < participant_count_) return;
  // Every report of the round is in: the stop's failure is now the round's earliest.
  if (last_stop_ && !failures_.empty()) last_stop_->failure = earliest_failure();
  if (outcome_ == Outcome::kRestart && steps_.out_of_progress(stop_counts_)) {
    const std::uint32_t n = config_.max_no_progress_restarts;
    finish(false,
           finish_reason_ + "; no new step in the last " + std::to_string(n + 1) +
               " rounds (max_no_progress_restarts " + std::to_string(n) +
               "): not restarting; exit code " + std::to_string(config_.no_progress_exit_code) +
               " says do not requeue",
           /*notify=*/true, out);
    return;
  }
  if (outcome_ == Outcome::kFail) {
    finish(false, finish_reason_, /*notify=*/true, out);
    return;
  }
  const std::size_t remaining = participant_count_ + waiting_count_;
  if (remaining < config_.min_nodes) {
    finish(false,
           finish_reason_ + "; " + std::to_string(remaining) + " node(s) remain, fewer than min " +
               std::to_string(config_.min_nodes),
           /*notify=*/true, out);
    return;
  }
  // Next round: the survivors (keeping their order) and the waiting nodes; every one of
  // them is known, so the round completes now rather than after a last call.
  ++round_;
  state_ = State::kPending;
  join_deadline_ = now_ + config_.join_timeout;
  for_each_participant([](NodeId, Member& m) {
    m.role = Role::kPending;
    m.prev_group_rank = m.group_rank;
  });
  for (auto& [id, m] : members_) {
    ++visits_;
    if (m.role == Role::kWaiting) m.role = Role::kPending;
  }
  pending_count_ = participant_count_ + waiting_count_;
  participant_count_ = 0;
  waiting_count_ = 0;
  complete_round(out);
}

void Job::finish(bool success, std::string reason, bool notify, Events& out) {
  state_ = State::kFinished;
  finished_at_ = now_;
  const std::optional<Failure> root = success ? std::nullopt : earliest_failure();
  root_cause_ = root;
  exit_code_ = success                            ? 0
               : steps_.stopped_for_no_progress() ? config_.no_progress_exit_code
                                                  : failure_exit_code(root);
  finish_reason_ = success ? std::move(reason) : "failed: " + reason;
  if (notify) {
    // Every node prints the root cause with its last lines; its stack head stays here.
    std::optional<Failure> told = root;
    if (told) told->diagnosis.stack_head.clear();
    // Participants in rank order, then everyone else (waiting, pending) by join order.
    std::vector<std::pair<std::uint64_t, NodeId>> others;
    for_each_participant([&](NodeId id, Member&) {
      out.push_back({id, JobFinished{exit_code_, finish_reason_, told, goodput(now_),
                                     steps_.stopped_for_no_progress()}});
    });
    for (const auto& [id, m] : members_) {
      ++visits_;
      if (m.role != Role::kParticipant) others.emplace_back(m.join_seq, id);
    }
    std::sort(others.begin(), others.end());
    for (const auto& [seq, id] : others) {
      out.push_back({id, JobFinished{exit_code_, finish_reason_, told, goodput(now_),
                                     steps_.stopped_for_no_progress()}});
    }
  }
  members_.clear();
  rank_holders_.clear();
  expiries_.clear();
  roster_.clear();
  close_failures();
  pending_count_ = participant_count_ = waiting_count_ = succeeded_count_ = stopped_count_ = 0;
}

}  // namespace ddp::rendezvous::membership
