// The membership state machine of one job (one run id). Pure: no I/O, no clock reads, no
// threads. Every input takes the injected `now` and appends the events it causes to `out`;
// the caller (the Registry, for the daemon's NativeHub) delivers them as pushes and arms one
// timer at next_deadline(), calling on_deadline() when it fires. A `now` earlier than one
// already seen counts as the one seen. Not thread-safe: call from one thread (the io_context).
//
// States:   kPending --(MAX joined | last call after MIN | MIN at join timeout)--> kRunning
//           kPending --(join timeout below MIN)--> kFinished (ErrorEvent kTimeout to waiters)
//           kRunning --(failure | node lost | waiting node with room)--> kStopping
//           kRunning --(every participant succeeded)--> kFinished (exit 0)
//           kStopping --(every participant stopped; restart and >= MIN nodes)--> kRunning
//                                          (next round, completes at once: nodes are known)
//           kStopping --(no restarts left | < MIN nodes remain | a stuck worker |
//                        max_no_progress_restarts reached)--> kFinished (exit != 0)
// Restarts: a worker failure moves restart_count once per round, when the stop begins (later
// reports for the same round are recorded for the root cause, not counted); max_restarts
// exhausted means the job fails, as does a failure marked no_restart (a stuck worker:
// messages.h). Departures (a participant lost while running: LEAVE, closed
// connection, missed heartbeats) re-form the job without moving it, as long as >= MIN nodes
// remain; only the departures after the first max_nodes of the job's life count like a
// failure (the bound on a flapping node). A waiting node's restart does not move it.
// Removal: a node removed for missed heartbeats, a stop timeout or (exclude_straggler) a
// persistent straggler is told at once (ErrorEvent kPeerGone naming why, pushed on its
// still-open connection), and every later request on that connection is refused with the same
// reason (Registry), never dropped.
// Rank rule: ranks.h. Pinned ranks (static rendezvous, pinned_ranks): every JOIN names its
// group rank; a JOIN without one, or naming a rank a present node holds, gets an ErrorEvent
// (the job goes on without that node); a node joining a running pinned job (its rank's holder
// succeeded and left) waits for the end instead of triggering a restart.
// Only the end of the job closes it: a node that leaves (SIGTERM, closed connection, missed
// heartbeats) is a lost node, never a close.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/membership/config.h"
#include "rendezvous/membership/job_view.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/membership/step_record.h"

namespace ddp::rendezvous::membership {

// A job's durable facts, for a daemon taking over a job whose daemon was lost (the etcd
// backend's new host): Job::resume.
struct ResumePoint {
  std::uint64_t round = 1;  // the next round's number
  std::uint32_t restart_count = 0;
  std::uint32_t departures = 0;
  // The nodes expected back (the last round's survivors): the first round forms as soon as
  // that many (and MIN) joined, without the last call; with `ranks`, counted among the nodes
  // holding their keys, and MAX does not form it before them. 0: the usual rule.
  std::uint32_t expected_nodes = 0;
  // Nodes that were waiting to take a lost node's place (spares): with expected_nodes, the
  // first round also waits for them (up to MAX) before forming without the last call.
  std::uint32_t spares = 0;
  // The last round's node keys by group rank ("": gone): a node joining with its key is a
  // survivor of that rank (ranks.h) in the first round.
  std::vector<std::string> ranks{};
  // Progress and goodput go on: the best step, the no-progress streak, the stepping time of
  // the rounds before and the job's age (from its first JOIN) when resumed.
  std::optional<std::int64_t> best_step{};
  std::uint32_t no_progress_restarts = 0;
  Duration stepping{};
  Duration age{};
};

// root_cause_of's rule fed one failure at a time, O(1) each: indexes into a round's failures.
class RootPick {
 public:
  void add(const std::vector<Failure>& failures, std::size_t index);
  std::optional<std::size_t> root(const std::vector<Failure>& failures) const;

 private:
  std::optional<std::size_t> hung_;   // the hung failure that stalled first
  std::optional<std::size_t> other_;  // the earliest other one
};

class Job {
 public:
  using State = JobState;

  // Precondition: validate(config) is OK; with pinned_ranks, min_nodes == max_nodes.
  Job(std::string run_id, Config config, bool pinned_ranks, TimePoint now);

  // `id` must not be a member already (kInvalidArgument ErrorEvent otherwise). `node_rank`
  // must be set exactly when the job has pinned ranks, below max_nodes, and not held by a
  // present node (kInvalidArgument ErrorEvent naming the fix otherwise). A finished job
  // answers kJobFinished.
  void join(NodeId id, NodeInfo info, std::optional<std::uint32_t> node_rank, TimePoint now,
            Events& out);
  // Any request refreshes the sender's heartbeat; this one does nothing else.
  void heartbeat(NodeId id, TimePoint now);
  // The caller could not hear anyone until `now` (its own process was paused): every member's
  // heartbeat budget starts again from `now`, so nobody is removed for that silence.
  void pardon(TimePoint now);
  // While the round forms (kPending) and `id` is in it: a Waiting event to `id`.
  void query_waiting(NodeId id, TimePoint now, Events& out);
  void report_failure(NodeId id, std::uint64_t round, std::vector<Failure> failures, TimePoint now,
                      Events& out);
  void workers_stopped(NodeId id, std::uint64_t round, TimePoint now, Events& out);
  void report_success(NodeId id, std::uint64_t round, TimePoint now, Events& out);
  // A participant's workers of `round` beat new steps (Progress, docs/progress.md): steps()
  // records them (ranks outside the node's range are ignored). Ranks that became stragglers
  // get a Straggler event to `id`; with exclude_straggler the running job then removes `id`
  // like a lost node (kPeerGone to it).
  void progress(NodeId id, std::uint64_t round, Duration stepping,
                const std::vector<RankProgress>& ranks, TimePoint now, Events& out);
  // The node is gone (LEAVE, closed connection); `why_text` adds detail, e.g. "SIGTERM".
  void remove_node(NodeId id, GoneReason why, const std::string& why_text, TimePoint now,
                   Events& out);
  // Requests from unknown ids and reports for another round are ignored (stale reports race
  // with pushes by design).

  // Taking over a job whose daemon was lost. Precondition: no node joined yet.
  void resume(const ResumePoint& at);
  // What a successor resumes from if this daemon is lost at `now` (expected_nodes 0).
  ResumePoint resume_point(TimePoint now) const;

  // The earliest instant at which on_deadline() has work; nullopt when none.
  std::optional<TimePoint> next_deadline() const;
  void on_deadline(TimePoint now, Events& out);

  const std::string& run_id() const { return run_id_; }
  const Config& config() const { return config_; }
  bool pinned_ranks() const { return pinned_ranks_; }
  State state() const { return state_; }
  std::uint64_t round() const { return round_; }
  std::uint32_t restart_count() const { return restart_count_; }
  std::size_t node_count() const { return members_.size(); }
  bool has_node(NodeId id) const { return members_.count(id) != 0; }
  // Why `id` was removed by the daemon (missed heartbeats, stop timeout, persistent
  // straggler): the message it was pushed; nullptr when it was not removed that way (or
  // forget() ran).
  const std::string* removal(NodeId id) const;
  // The connection of `id` closed: drop what was remembered of it.
  void forget(NodeId id) { removed_.erase(id); }
  // Removed nodes whose connections are still open.
  std::size_t removed_count() const { return removed_.size(); }
  // Participants lost while running so far (each re-formed the job or stopped it).
  std::uint32_t departures() const { return departures_; }
  // After kFinished: the exit code every node was told and why.
  std::int32_t exit_code() const { return exit_code_; }
  const std::string& finish_reason() const { return finish_reason_; }
  // After kFinished: the failure every node was told is the root cause (none on success).
  const std::optional<Failure>& root_cause() const { return root_cause_; }
  TimePoint finished_at() const { return finished_at_; }
  // Progress, stepping time and stragglers (step_record.h).
  const StepRecord& steps() const { return steps_; }
  // Goodput (docs/goodput.md) at `now`; after kFinished, at the end.
  Goodput goodput(TimePoint now) const;
  // Member and record visits made by loops so far: lets tests check that work per request
  // stays constant (a scan of all nodes per request would make a K-node job cost ~K^2).
  std::uint64_t visits() const { return visits_ + steps_.visits(); }
  // Observers (job_view.cc). counters() is O(1); view() copies every node, O(nodes), and the
  // failed workers; view(false) leaves JobView::nodes and failed_workers empty (/metrics).
  const JobCounters& counters() const { return counters_; }
  JobView view(bool full = true) const;

 private:
  enum class Role : std::uint8_t { kPending, kParticipant, kWaiting };
  enum class Outcome : std::uint8_t { kRestart, kFail };
  struct Member {
    NodeInfo info;
    Role role = Role::kPending;
    std::uint64_t join_seq = 0;
    std::optional<std::uint32_t> prev_group_rank;
    std::optional<std::uint32_t> pinned_rank;  // set in jobs with pinned ranks
    std::uint32_t group_rank = 0;
    std::uint64_t rank_offset = 0;  // of the round it last took part in
    TimePoint expires{};
    TimePoint joined_at{};
    bool succeeded = false;
    bool stopped = false;
  };

  void advance(TimePoint now);
  // The reason a JOIN's node_rank is not acceptable; empty when it is.
  std::string pinned_rank_error(const NodeInfo& info, std::optional<std::uint32_t> node_rank) const;
  void touch(NodeId id, Member& m);
  // advance(now), then the member `id` touched (a message from it); nullptr when it is none.
  Member* heard_from(NodeId id, TimePoint now);
  void trim_heartbeats();
  void after_pending_change(Events& out);
  void complete_round(Events& out);
  void begin_stop(StopReason reason, bool counts, std::string detail, Events& out);
  void mark_stopped(Member& m);
  // A failure of this round from failures_[from] on with no_restart: the stop ends the job
  // (outcome_ kFail), and `detail` says why. False when there is none. Each failure is looked
  // at once per round (begin_stop from 0, each later report from its own).
  bool refuse_restart_if_stuck(std::size_t from, std::string& detail);
  void maybe_finish_stop(Events& out);
  void finish(bool success, std::string reason, bool notify, Events& out);
  std::optional<Failure> earliest_failure() const;  // root_cause_of(failures_)
  void add_failure(Failure f);                      // to failures_, diagnoses bounded
  std::vector<Failure> diagnosed_failures() const;  // of failures_ (kDiagnosedFailures)
  void close_failures();                            // the round's failures become the last
  std::string describe(const Member& m) const;
  // Calls f(id, member) for every present participant, in group-rank order.
  template <typename F>
  void for_each_participant(F&& f);

  std::string run_id_;
  Config config_;
  bool pinned_ranks_ = false;
  TimePoint now_;
  State state_ = State::kPending;
  std::uint64_t round_ = 1;
  std::uint32_t restart_count_ = 0;
  std::uint64_t next_join_seq_ = 0;

  std::unordered_map<NodeId, Member> members_;
  std::unordered_map<std::uint32_t, NodeId> rank_holders_;  // pinned rank -> present member
  std::size_t pending_count_ = 0;
  std::size_t participant_count_ = 0;
  std::size_t waiting_count_ = 0;
  std::size_t succeeded_count_ = 0;  // participants that reported success this round
  std::size_t stopped_count_ = 0;    // participants whose workers are down this round
  std::vector<NodeId> roster_;       // this round's participants by group rank (some may be gone)

  // Heartbeat expiries in time order (every node has the same budget, so pushes arrive in
  // order). An entry is stale once its node is gone or refreshed; stale fronts are trimmed.
  std::deque<std::pair<TimePoint, NodeId>> expiries_;

  TimePoint join_deadline_;
  std::optional<TimePoint> last_call_;
  TimePoint stop_deadline_;
  Outcome outcome_ = Outcome::kRestart;
  std::vector<Failure> failures_;  // this round's, across nodes
  RootPick pick_;                  // over failures_

  std::uint32_t departures_ = 0;
  std::uint32_t expected_nodes_ = 0;  // ResumePoint::expected_nodes, until a round forms
  std::uint32_t spares_ = 0;          // ResumePoint::spares, likewise
  std::unordered_map<std::string, std::uint32_t> resume_ranks_;  // ResumePoint::ranks, likewise
  std::size_t survivors_back_ = 0;                   // pending nodes holding a key of resume_ranks_
  std::unordered_map<NodeId, std::string> removed_;  // removed ids with open connections

  bool stop_counts_ = false;  // the current stop counts as a restart
  StepRecord steps_;

  std::int32_t exit_code_ = 0;
  std::string finish_reason_;
  std::optional<Failure> root_cause_;
  TimePoint finished_at_{};
  mutable std::uint64_t visits_ = 0;

  // Observers' record (job_view.h): never read by the state machine itself.
  void count_failure(FailureCause cause) { ++counters_.failures[static_cast<std::size_t>(cause)]; }
  TimePoint created_at_{};
  TimePoint forming_since_{};  // when the round now forming began to form
  std::optional<TimePoint> round_completed_at_;
  std::uint64_t world_size_ = 0;  // workers of the last completed round (JobView::world_size)
  std::optional<StopView> last_stop_;
  std::vector<Failure> last_failures_;  // diagnosed_failures() of the last round with any
  std::size_t last_failure_count_ = 0;  // every failure of that round
  JobCounters counters_;
};

template <typename F>
void Job::for_each_participant(F&& f) {
  for (NodeId id : roster_) {
    ++visits_;
    auto it = members_.find(id);
    if (it != members_.end() && it->second.role == Role::kParticipant) f(id, it->second);
  }
}

// The exit code of a failed job: the root cause's code when it is 1..255, 128 + signal for a
// signal death, else 1.
std::int32_t failure_exit_code(const std::optional<Failure>& root_cause);

// The root cause among one round's failures (any order in, the same answer out): the hung
// worker that stalled first (the lowest step, none counting lowest; then the earliest last
// beat; then the lowest rank) stands for every hung one; it and the other failures compete
// by time, then rank. nullopt when `failures` is empty.
std::optional<Failure> root_cause_of(const std::vector<Failure>& failures);

}  // namespace ddp::rendezvous::membership
