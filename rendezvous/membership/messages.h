// The vocabulary between agents and the membership state machine: what an agent asks
// (requests, agent -> daemon) and what it is told (events, daemon -> agent). Plain values;
// wire.h encodes both. A NodeId is the caller's connection id: unique per connection for
// the daemon's lifetime, one agent per connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"
#include "rendezvous/membership/config.h"
#include "rendezvous/membership/diagnosis.h"

namespace ddp::rendezvous::membership {

using NodeId = std::uint64_t;
// Wall-clock time of a failure (the error file's timestamp, else when the agent saw it).
using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::microseconds>;

// What a node advertises when it joins.
struct NodeInfo {
  std::string node_key;                // for messages and root-cause tables, e.g. "host-b:4711"
  std::string addr;                    // address other nodes reach it at (--local-addr)
  std::uint16_t store_port = 0;        // the worker-store port it holds open for the whole job
  std::uint32_t local_world_size = 1;  // its worker count (LOCAL_WORLD_SIZE)
  bool operator==(const NodeInfo&) const = default;
};

// One worker failure. node_key and group_rank are filled in by the daemon from the
// reporting node; agents may leave them empty.
//
// A worker its agent judged hung by its silence (docs/hangs.md) has `hung` set; its time is
// its last beat, and `step` the last step its beats carried (none: it never beat, or beat
// without steps). Hung workers are ordered among themselves by step first (root_cause_of):
// when each agent read its workers' beats depends on scheduling, how far they got does not.
//
// `no_restart`: the job must not restart for this failure (a worker its agent could not end,
// or one stuck in uninterruptible sleep: docs/unkillable.md); the round's stop ends the job.
struct Failure {
  std::string node_key;
  std::uint32_t group_rank = 0;
  std::uint32_t local_rank = 0;
  std::uint32_t rank = 0;      // global rank
  std::int32_t exit_code = 1;  // negative: killed by signal -exit_code (torchrun's convention)
  std::int64_t pid = 0;
  WallTime time{};
  std::string error_file;
  std::string message;  // "<type>: <text>" from the error file if any
  bool hung = false;
  std::optional<std::int64_t> step;  // hung: the last step it beat
  Diagnosis diagnosis;               // its last lines and stack head (bounded; diagnosis.h)
  bool no_restart = false;
  std::string traceback;  // the error file's stack (py_callstack), if any
  bool operator==(const Failure&) const = default;
};

// ---- requests (agent -> daemon) --------------------------------------------------------
struct JoinRequest {
  std::string run_id;
  Config config;
  NodeInfo node;
  // Static rendezvous (--node-rank): the group rank this node must get. A job is either all
  // pinned or all unpinned (its first JOIN decides); pinned needs min_nodes == max_nodes, a
  // rank below max_nodes, and no other present node holding the same rank.
  std::optional<std::uint32_t> node_rank{};
  bool operator==(const JoinRequest&) const = default;
};
struct Heartbeat {
  bool operator==(const Heartbeat&) const = default;
};
// The node's workers of `round` failed (and the agent has stopped the rest of them).
struct ReportFailure {
  std::uint64_t round = 0;
  std::vector<Failure> failures;
  bool operator==(const ReportFailure&) const = default;
};
// The node stopped its workers of `round` as StopWorkers asked, without a failure of its own.
struct WorkersStopped {
  std::uint64_t round = 0;
  bool operator==(const WorkersStopped&) const = default;
};
// Every worker of the node exited 0 in `round`; the node waits for JobFinished.
struct ReportSuccess {
  std::uint64_t round = 0;
  bool operator==(const ReportSuccess&) const = default;
};
// The agent is going away (e.g. SIGTERM). Does not close the job for the others.
struct Leave {
  std::string reason;
  bool operator==(const Leave&) const = default;
};
// How far the first round's rendezvous has come: answered with a Waiting push while the job
// is still forming (nothing otherwise). Agents ask at a calm rate to show progress; asking is
// O(1) for the daemon, whereas a push to every node on each join would be O(nodes^2).
struct QueryWaiting {
  bool operator==(const QueryWaiting&) const = default;
};
// How far one rank got in a round, as its heartbeats told its agent (docs/progress.md).
struct RankProgress {
  std::uint64_t rank = 0;  // global rank
  std::int64_t step = 0;   // the last step its beats carried
  // Time per step between its last two step changes; zero until the step changed once.
  std::chrono::microseconds step_time{};
  bool operator==(const RankProgress&) const = default;
};
// The node's workers of `round` beat new steps: every rank of the node that beat a step so
// far, and how long the node has been stepping this round (from the first beat carrying a
// step to the last one, on the agent's clock). Agents send it at most once per
// keep_alive_interval, and once more before they report the round's end. Like any request it
// refreshes the sender's heartbeat.
struct Progress {
  std::uint64_t round = 0;
  Duration stepping{};
  std::vector<RankProgress> ranks;
  bool operator==(const Progress&) const = default;
};
using Request = std::variant<JoinRequest, Heartbeat, ReportFailure, WorkersStopped, ReportSuccess,
                             Leave, QueryWaiting, Progress>;

// ---- events (daemon -> agent) ----------------------------------------------------------
// Reply to JOIN: the node is in, for `round`; `waiting` when a round is running (it will be
// admitted at the next restart, which its arrival triggers if the job has room).
struct Joined {
  std::uint64_t round = 0;
  bool waiting = false;
  bool operator==(const Joined&) const = default;
};
// A round completed: this node's place in it. Global rank of local rank l = rank_offset + l.
struct RoundComplete {
  std::uint64_t round = 0;
  std::uint32_t restart_count = 0;  // job-global: TORCHELASTIC_RESTART_COUNT
  std::uint32_t group_rank = 0;
  std::uint32_t group_world_size = 0;
  std::uint32_t local_world_size = 0;
  std::uint64_t rank_offset = 0;
  std::uint64_t world_size = 0;  // sum of every participant's local_world_size
  std::string store_addr;        // group rank 0's advertised address ...
  std::uint16_t store_port = 0;  // ... and worker-store port
  bool operator==(const RoundComplete&) const = default;
};
enum class StopReason : std::uint8_t { kWorkerFailed = 1, kNodeLost = 2, kNodeJoined = 3 };
// Stop the workers of `round` now, then send WorkersStopped (or ReportFailure).
struct StopWorkers {
  std::uint64_t round = 0;
  StopReason reason = StopReason::kWorkerFailed;
  std::string detail;                    // e.g. "node host-b:7 (group rank 1) left: ..."
  std::optional<Failure> first_failure;  // earliest failure known so far
  bool operator==(const StopWorkers&) const = default;
};
// How much of a job's time its workers spent stepping (docs/goodput.md): `stepping` sums each
// round's stepping time (Progress::stepping, the longest of any node's), `wall` runs from the
// job's first JOIN to its end (or to now).
struct Goodput {
  Duration stepping{};
  Duration wall{};
  // stepping / wall, 0 when wall is 0.
  double ratio() const {
    return wall.count() > 0 ? static_cast<double>(stepping.count()) / wall.count() : 0.0;
  }
  bool operator==(const Goodput&) const = default;
};
// The job is over for everyone: exit with exit_code (same on every node).
struct JobFinished {
  std::int32_t exit_code = 0;
  std::string reason;
  std::optional<Failure> root_cause;  // the earliest failure of the last round, across nodes
  Goodput goodput;
  bool no_progress = false;  // ended by max_no_progress_restarts (docs/progress.md)
  bool operator==(const JobFinished&) const = default;
};
// The request failed; `message` names the problem and the fix.
struct ErrorEvent {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  bool operator==(const ErrorEvent&) const = default;
};
// Reply to QueryWaiting while the round forms: `joined` nodes so far of min_nodes..max_nodes;
// the round forms at max_nodes, or last_call_left after min_nodes joined; the rendezvous
// fails join_timeout_left from now if fewer than min_nodes joined by then.
struct Waiting {
  std::uint32_t joined = 0;
  std::uint32_t min_nodes = 0;
  std::uint32_t max_nodes = 0;
  Duration join_timeout_left{};
  std::optional<Duration> last_call_left;
  bool operator==(const Waiting&) const = default;
};
// One of this node's ranks became a straggler (docs/stragglers.md): its step time exceeded the
// job's median by the job's factor in `reports` progress reports in a row. `removed`: the job
// removes this node for it (exclude_straggler); an ErrorEvent kPeerGone follows.
struct Straggler {
  std::uint64_t round = 0;
  std::uint64_t rank = 0;
  std::chrono::microseconds step_time{};
  std::chrono::microseconds median{};
  std::uint32_t reports = 0;
  bool removed = false;
  bool operator==(const Straggler&) const = default;
};
using Payload =
    std::variant<Joined, RoundComplete, StopWorkers, JobFinished, ErrorEvent, Waiting, Straggler>;

struct Event {
  NodeId to = 0;
  Payload payload;
  bool operator==(const Event&) const = default;
};
using Events = std::vector<Event>;

// Why a node is gone.
enum class GoneReason : std::uint8_t {
  kLeft,              // LEAVE
  kConnectionClosed,  // the session saw EOF or an error
  kHeartbeatMissed,   // silent for Config::heartbeat_budget()
  kStopTimeout,       // did not report stopped workers within close_timeout
  kStraggler,         // a persistent straggler, with Config::exclude_straggler
};

}  // namespace ddp::rendezvous::membership
