// The agent's event log (docs/event_log.md): one JSON object per line for each thing that
// happens to this node's part of a job, for programs to read. The policy (agent_machine.h)
// reports rendezvous, restarts, failures and the end; the workers' mechanism
// (supervised_workers.h) reports each group's start with its pids and each worker's exit.
//
// Every line starts with the same keys, in this order:
//   ts             RFC 3339 UTC time with milliseconds, "2026-11-24T22:35:00.123Z"
//   ts_unix        the same time, seconds since the epoch (a number with milliseconds)
//   event          the event's name (below)
//   run_id, host, agent_pid
//   round, restart_count, group_rank   of this node's current round; null before the first
// then the event's own keys. Events: join, round, restart, workers_started, worker_exited,
// workers_hung, stop_requested, straggler, workers_done, failure, signal, lost, finish. The names
// and keys are a stable interface: later versions add keys and events, never rename or remove
// one.
//
// A default-constructed EventLog writes nothing (no --event-log); its methods cost a branch.
//
// Threading: the agent's io_context thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/membership/rendezvous_backend.h"
#include "agent/report/event_sink.h"
#include "agent/workers/supervisor.h"
#include "agent/workers/workers.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

// Who writes the lines, and how this node joins (the `join` event's keys).
struct EventOrigin {
  std::string run_id;
  std::string host;
  pid_t agent_pid = 0;
  std::string backend;                 // "local" (one node), "static", "c10d" or "etcd"
  std::string endpoint;                // --rdzv-endpoint; empty for one node
  rendezvous::membership::Config job;  // min_nodes, max_nodes, max_restarts
  int nproc_per_node = 1;
};

struct StartedWorker {
  int local_rank = 0;
  int rank = 0;
  pid_t pid = 0;
};

class EventLog {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  EventLog() = default;  // writes nothing
  // `now` is the time of each line (system_clock::now unless a test fixes it).
  EventLog(std::unique_ptr<EventSink> sink, EventOrigin origin, WallClock now = {});

  bool enabled() const { return sink_ != nullptr; }

  // The policy's events (agent_machine.h).
  void join();
  void round(const Round& round);  // also sets the round keys of every later line
  // A new round after this node's group ended (before round(next)); sets the round keys.
  void restart(const Round& next, std::uint64_t previous_round, int previous_restart_count);
  void workers_hung(const HangReport& report);
  void stop_requested(std::uint64_t round, const std::string& detail);
  void straggler(const rendezvous::membership::Straggler& straggler);
  void workers_done(const WorkersResult& result);
  void failure(const rendezvous::membership::JobFinished& finished);
  void signal(int signal);
  void lost(const std::string& why);
  // why: "job_finished", "signal", "lost", or "error" (the node could not take part at all).
  // `goodput`: the job's (JobFinished), when this node learned the end.
  void finish(int exit_code, const std::string& why,
              const std::optional<rendezvous::membership::Goodput>& goodput = std::nullopt);

  // The workers' mechanism's events (supervised_workers.h).
  void workers_started(int attempt, const std::vector<StartedWorker>& workers);
  void worker_exited(int local_rank, int rank, pid_t pid, proc::ExitStatus status);

 private:
  struct Position {
    std::uint64_t round = 0;
    int restart_count = 0;
    int group_rank = 0;
  };
  class Line;

  std::unique_ptr<EventSink> sink_;
  EventOrigin origin_;
  WallClock now_;
  std::optional<Position> position_;
};

// "2026-11-24T22:35:00.123Z": RFC 3339, UTC, milliseconds (truncated).
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

}  // namespace ddp::agent
