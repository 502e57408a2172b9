// What the status endpoint shows, as plain values, and where it comes from: StatusSource is the
// seam between the HTTP layer (router.h) and the daemon's state, so the router and the
// formatters are tested with a fake source and no socket. DaemonStatusSource reads the real
// daemon: its Server's counters and membership Registry, this process's /proc/self, the clocks.
//
// Threading: the daemon's io_context thread (the Server's observers are not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/membership/job_view.h"
#include "rendezvous/server.h"

namespace ddp::rendezvous::status {

// Both clocks read at one instant: views carry steady time points, JSON shows wall time.
struct Clocks {
  membership::TimePoint steady{};
  std::chrono::system_clock::time_point wall{};
  std::chrono::system_clock::time_point to_wall(membership::TimePoint t) const {
    return wall - std::chrono::duration_cast<std::chrono::system_clock::duration>(steady - t);
  }
};

// This process, from /proc/self (process_stats.h). Zero when unreadable.
struct ProcessStats {
  std::uint64_t rss_bytes = 0;
  double cpu_seconds = 0;  // user + system
  std::uint64_t open_fds = 0;
};

// The status port's own traffic.
struct HttpCounters {
  std::uint64_t open_connections = 0;
  std::uint64_t requests = 0;
  std::uint64_t rejected_connections = 0;  // over the connection cap
  std::uint64_t bad_requests = 0;          // malformed, oversized or too slow
};

struct MetricsInput {
  std::vector<membership::JobView> jobs;  // Job::view(false): no nodes, no failed workers
  membership::TimePoint now{};            // the steady time of the scrape, for goodput
  membership::RegistryTotals totals;
  ServerStats server;
  ProcessStats process;
  HttpCounters http;
};

class StatusSource {
 public:
  virtual ~StatusSource() = default;
  virtual MetricsInput metrics() const = 0;
  // Every job, by run id, with its nodes.
  virtual std::vector<membership::JobView> jobs() const = 0;
  // nullopt when the daemon does not know `run_id` (never did, or its retention ended).
  virtual std::optional<membership::JobView> job(std::string_view run_id) const = 0;
  virtual Clocks clocks() const = 0;
};

// The real daemon. Holds references: `server` and `http` must outlive it.
class DaemonStatusSource final : public StatusSource {
 public:
  DaemonStatusSource(const Server& server, const HttpCounters& http)
      : server_(server), http_(http) {}
  MetricsInput metrics() const override;
  std::vector<membership::JobView> jobs() const override;
  std::optional<membership::JobView> job(std::string_view run_id) const override;
  Clocks clocks() const override;

 private:
  const Server& server_;
  const HttpCounters& http_;
};

}  // namespace ddp::rendezvous::status
