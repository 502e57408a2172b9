// Read-only views of the membership state for observers (the daemon's status endpoint, tests):
// plain values copied out of a Job or the Registry, so an observer never holds a pointer into
// state that the next request may change. Pure like the rest of this library: time points are
// the injected steady-clock ones; an observer converts them to wall time itself.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/membership/config.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

// A job's state (Job::State; diagrammed in job.h).
enum class JobState : std::uint8_t { kPending, kRunning, kStopping, kFinished };

// Why a job stopped its workers or lost a node, for the failure counters.
enum class FailureCause : std::uint8_t {
  kWorkerFailed,      // a node reported a worker failure (once per round)
  kNodeLeft,          // a participant sent LEAVE before it succeeded
  kConnectionClosed,  // a participant's connection closed before it succeeded
  kHeartbeatMissed,   // a node was removed for silence
  kStopTimeout,       // a node did not report its workers stopped within close_timeout
  kJoinTimeout,       // the first round did not reach MIN nodes in time
};
inline constexpr std::size_t kFailureCauseCount = 6;
// "worker_failed", "node_left", "connection_closed", "heartbeat_missed", "stop_timeout",
// "join_timeout" (metric label values and JSON strings).
std::string_view cause_name(FailureCause cause);

// Round latency: from the moment a round starts to form (the job's first JOIN, or the start
// of the stop that leads to a restart round) to its RoundComplete. Fixed buckets (seconds).
struct LatencyHistogram {
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.05, 0.1, 0.25, 0.5,
                                                     1,     2.5,  5,    10,  30,   60};
  std::array<std::uint64_t, kBounds.size()> buckets{};  // per bucket, not cumulative
  std::uint64_t count = 0;                              // every sample, +Inf included
  double sum_seconds = 0;
  void observe(Duration latency);
};

// Counters of one job's life, all monotonic.
struct JobCounters {
  std::uint64_t rounds_completed = 0;
  std::uint64_t restarts = 0;  // moves of restart_count (not set by resume())
  std::array<std::uint64_t, kFailureCauseCount> failures{};
  Duration last_round_latency{};
};

// Every job's counters summed over the daemon's life (jobs erased after retention included).
struct RegistryTotals {
  std::uint64_t jobs_created = 0;
  std::uint64_t rounds_completed = 0;
  std::uint64_t restarts = 0;
  std::array<std::uint64_t, kFailureCauseCount> failures{};
  LatencyHistogram round_latency;
};

// The last stop of a job's workers (failure, lost node, admitted node).
struct StopView {
  StopReason reason = StopReason::kWorkerFailed;
  std::string detail;
  std::optional<Failure> failure;  // the earliest worker failure of that round, if any
  TimePoint at{};
};

struct NodeView {
  // kSpare: waiting while the job runs max_nodes participants; it takes a lost node's group
  // rank at the next round (ranks.h). kWaiting: waiting for a round that will admit it.
  enum class Role : std::uint8_t { kPending, kParticipant, kWaiting, kSpare };
  NodeInfo info;
  Role role = Role::kPending;
  std::optional<std::uint32_t> group_rank;   // participants
  std::optional<std::uint64_t> rank_offset;  // participants: global rank of local rank 0
  bool succeeded = false;                    // this round
  TimePoint joined_at{};
};

// A flagged rank's step time.
struct RankStepView {
  std::uint64_t rank = 0;
  std::chrono::microseconds step_time{};
  bool operator==(const RankStepView&) const = default;
};

// A job's steps (step_record.h): progress (docs/progress.md), the stepping time of its rounds
// (docs/goodput.md) and this round's stragglers (docs/stragglers.md): how many, the median step
// time, and the first kListedStragglers flagged ranks by rank.
struct StepView {
  static constexpr std::size_t kListedStragglers = 32;
  std::optional<std::int64_t> best_step;
  std::uint32_t no_progress_restarts = 0;
  Duration stepping{};
  std::size_t stragglers = 0;
  std::chrono::microseconds median_step_time{};
  std::vector<RankStepView> straggler_ranks;
};

// One job as the status port shows it (/metrics, /api/jobs, the page, `ddprun status`).
struct JobView {
  std::string run_id;
  JobState state = JobState::kPending;
  std::uint64_t round = 0;
  std::uint32_t restart_count = 0;
  Config config;
  bool pinned_ranks = false;
  // Participants in group-rank order, then the others in join order (empty in Job::view(false)).
  std::vector<NodeView> nodes;
  std::size_t node_count = 0;
  std::uint64_t connections = 0;  // open agent connections bound to the job (the Registry's)
  std::uint64_t world_size = 0;   // workers of this round's participants
  TimePoint created_at{};
  std::optional<TimePoint> round_completed_at;
  std::optional<TimePoint> finished_at;
  std::optional<std::int32_t> exit_code;  // once finished
  std::string finish_reason;              // once finished
  std::optional<Failure> root_cause;      // once finished, failed
  std::optional<StopView> last_stop;
  // The failed workers of the round now stopping, else of the last round that had any: those
  // that kept their diagnosis (kDiagnosedFailures, diagnosis.h) in arrival order, the root cause
  // last if it arrived later (empty in Job::view(false)); failed_worker_count counts them all.
  std::vector<Failure> failed_workers;
  std::size_t failed_worker_count = 0;
  JobCounters counters;
  StepView steps;
  // The job's goodput at `now` (the observer's clock), or at its end once finished.
  Goodput goodput(TimePoint now) const {
    return {steps.stepping,
            std::chrono::duration_cast<Duration>(finished_at.value_or(now) - created_at)};
  }
};

std::string_view state_name(JobState state);           // "pending", "running", ...
std::string_view role_name(NodeView::Role role);       // "pending", "participant", "spare", ...
std::string_view stop_reason_name(StopReason reason);  // "worker_failed", "node_lost", ...

}  // namespace ddp::rendezvous::membership
