// Configuration of one job's rendezvous membership, as every agent of the job sends it with
// JOIN (from --nnodes, --max-restarts, --max-no-progress-restarts, --no-progress-exit-code,
// the straggler options and --rdzv-conf). The first JOIN of a run id creates the job with its
// config; later JOINs, while it has not finished, must carry an equal config
// (config_mismatch()).
//
// Time in this library is always injected: callers pass steady_clock time points; nothing
// here reads a clock. Durations stay std::chrono (milliseconds on the wire).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::rendezvous::membership {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::milliseconds;

inline constexpr std::uint32_t kMaxNodes = 1u << 20;                  // bound on --nnodes MAX
inline constexpr std::uint32_t kMaxRestarts = 1u << 20;               // bound on --max-restarts
inline constexpr Duration kMaxTimeout = std::chrono::hours(24 * 30);  // bound on every timeout
inline constexpr std::uint32_t kMaxKeepAliveAttempts = 1000;
inline constexpr std::uint32_t kMaxStragglerReports = 1000;

struct Config {
  std::uint32_t min_nodes = 1;
  std::uint32_t max_nodes = 1;
  std::uint32_t max_restarts = 0;
  // Bounds the wait for a round to reach MIN nodes (the waiters get a kTimeout error).
  Duration join_timeout = std::chrono::seconds(600);
  // After MIN nodes joined, the round completes this long later (or at MAX, earlier).
  Duration last_call_timeout = std::chrono::seconds(30);
  // How long the daemon waits for every participant to report its workers stopped after
  // StopWorkers; a node that has not by then is dropped. Keep it above the agents'
  // --shutdown-timeout (default 30 s), hence 60 s here rather than torchrun's 30 s.
  Duration close_timeout = std::chrono::seconds(60);
  // A node silent for keep_alive_interval * keep_alive_max_attempt is gone (default 3 s;
  // torchrun's 5 s x 3 = 15 s is too slow to notice a partition). Any message counts.
  Duration keep_alive_interval = std::chrono::seconds(1);
  std::uint32_t keep_alive_max_attempt = 3;
  // Progress-aware restarts (docs/progress.md): after this many restarts in a row that each
  // followed a round without a new best step, the next failure ends the job with
  // no_progress_exit_code (1..255; ft_launcher's default 93) instead of restarting. 0: off.
  std::uint32_t max_no_progress_restarts = 0;
  std::int32_t no_progress_exit_code = 93;
  // Stragglers (docs/stragglers.md): a rank whose step time exceeds straggler_factor_milli /
  // 1000 times the job's median for straggler_reports reports in a row (each with a new step)
  // is a straggler; with exclude_straggler its node is removed like a lost node. Factor 0: off.
  std::uint32_t straggler_factor_milli = 2000;
  std::uint32_t straggler_reports = 5;
  bool exclude_straggler = false;

  Duration heartbeat_budget() const { return keep_alive_interval * keep_alive_max_attempt; }
  bool operator==(const Config&) const = default;
};

// OK, or kInvalidArgument naming the field and the fix (e.g. "min_nodes 3 exceeds
// max_nodes 2; pass --nnodes MIN:MAX with MIN <= MAX").
Status validate(const Config& config);

// Empty when equal; otherwise one clause per differing field, e.g.
// "min_nodes 2 (this node) vs 3 (the job)".
std::string config_mismatch(const Config& mine, const Config& job);

}  // namespace ddp::rendezvous::membership
