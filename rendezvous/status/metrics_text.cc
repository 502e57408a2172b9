#include "rendezvous/status/metrics_text.h"

#include <array>
#include <charconv>
#include <system_error>

#include "rendezvous/protocol.h"

namespace ddp::rendezvous::status {
namespace {

constexpr std::array<membership::JobState, 4> kStates = {
    membership::JobState::kPending, membership::JobState::kRunning, membership::JobState::kStopping,
    membership::JobState::kFinished};

// Numbers as Prometheus reads them: the shortest text that reads back as the same double
// (0.005, not 0.0050000000000000001), integers exactly.
std::string number(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}
std::string number(std::uint64_t v) { return std::to_string(v); }

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  template <typename V>
  void sample(std::string_view name, V value, std::string_view labels = {}) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(number(value)).append("\n");
  }

 private:
  std::string& out_;
};

std::string label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + escape_label(value) + "\"";
}

}  // namespace

std::string escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_metrics(const MetricsInput& in) {
  std::string out;
  out.reserve(4096 + in.jobs.size() * 512);
  Writer w(out);

  w.family("ddp_rdzv_jobs", "gauge",
           "Jobs the daemon knows, by state (finished ones until their retention ends).");
  for (membership::JobState state : kStates) {
    std::uint64_t n = 0;
    for (const JobSummary& j : in.jobs) n += j.state == state ? 1 : 0;
    w.sample("ddp_rdzv_jobs", n, label("state", membership::state_name(state)));
  }
  w.family("ddp_rdzv_jobs_created_total", "counter",
           "Jobs created by a first JOIN since the daemon started.");
  w.sample("ddp_rdzv_jobs_created_total", in.totals.jobs_created);

  w.family("ddp_rdzv_job_nodes", "gauge",
           "Nodes in a job now (participants, waiting and joining).");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_nodes", j.nodes, label("run_id", j.run_id));
  w.family("ddp_rdzv_job_workers", "gauge",
           "Workers (world size) of a job's last completed round.");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_workers", j.world_size, label("run_id", j.run_id));
  w.family("ddp_rdzv_job_round", "gauge", "A job's current round number (from 1).");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_round", j.round, label("run_id", j.run_id));
  w.family("ddp_rdzv_job_restarts", "gauge",
           "A job's restart count (TORCHELASTIC_RESTART_COUNT of its workers).");
  for (const JobSummary& j : in.jobs) {
    w.sample("ddp_rdzv_job_restarts", std::uint64_t{j.restart_count}, label("run_id", j.run_id));
  }
  w.family("ddp_rdzv_job_max_restarts", "gauge", "A job's restart limit (--max-restarts).");
  for (const JobSummary& j : in.jobs) {
    w.sample("ddp_rdzv_job_max_restarts", std::uint64_t{j.max_restarts}, label("run_id", j.run_id));
  }
  w.family("ddp_rdzv_job_connections", "gauge", "Open agent connections bound to a job.");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_connections", j.connections, label("run_id", j.run_id));

  w.family("ddp_rdzv_job_goodput_ratio", "gauge",
           "A job's time with workers stepping over its wall time since its first join "
           "(docs/goodput.md).");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_goodput_ratio", j.goodput.ratio(), label("run_id", j.run_id));
  w.family("ddp_rdzv_job_stepping_seconds", "gauge",
           "A job's time with workers stepping, summed over its rounds (docs/goodput.md).");
  for (const JobSummary& j : in.jobs) {
    w.sample("ddp_rdzv_job_stepping_seconds",
             std::chrono::duration<double>(j.goodput.stepping).count(), label("run_id", j.run_id));
  }

  auto seconds = [](std::chrono::microseconds d) {
    return std::chrono::duration<double>(d).count();
  };
  w.family("ddp_rdzv_job_stragglers", "gauge",
           "Ranks of a job's round flagged as stragglers (docs/stragglers.md).");
  for (const JobSummary& j : in.jobs)
    w.sample("ddp_rdzv_job_stragglers", j.stragglers, label("run_id", j.run_id));
  w.family("ddp_rdzv_job_median_step_seconds", "gauge",
           "The median of a job's ranks' step times this round (0 until known).");
  for (const JobSummary& j : in.jobs) {
    w.sample("ddp_rdzv_job_median_step_seconds", seconds(j.median_step_time),
             label("run_id", j.run_id));
  }
  // Per-rank series for at most JobSummary::kMetricsSlowRanks ranks of each job.
  w.family("ddp_rdzv_rank_step_seconds", "gauge",
           "Step time of a job's stragglers and slowest ranks (at most 8 per job).");
  for (const JobSummary& j : in.jobs) {
    for (const membership::RankStepView& r : j.slow_ranks) {
      w.sample("ddp_rdzv_rank_step_seconds", seconds(r.step_time),
               label("run_id", j.run_id) + "," + label("rank", std::to_string(r.rank)));
    }
  }
  w.family(
      "ddp_rdzv_rank_straggler", "gauge",
      "1 when the rank is flagged as a straggler, for the ranks of ddp_rdzv_rank_step_seconds.");
  for (const JobSummary& j : in.jobs) {
    for (const membership::RankStepView& r : j.slow_ranks) {
      w.sample("ddp_rdzv_rank_straggler", std::uint64_t{r.straggler ? 1u : 0u},
               label("run_id", j.run_id) + "," + label("rank", std::to_string(r.rank)));
    }
  }
  w.family("ddp_rdzv_rounds_total", "counter", "Rendezvous rounds completed, every job.");
  w.sample("ddp_rdzv_rounds_total", in.totals.rounds_completed);
  w.family("ddp_rdzv_restarts_total", "counter",
           "Restarts counted against --max-restarts, every job.");
  w.sample("ddp_rdzv_restarts_total", in.totals.restarts);
  w.family("ddp_rdzv_failures_total", "counter",
           "Worker failures and lost nodes, by cause, every job.");
  for (std::size_t i = 0; i < membership::kFailureCauseCount; ++i) {
    w.sample("ddp_rdzv_failures_total", in.totals.failures[i],
             label("cause", membership::cause_name(static_cast<membership::FailureCause>(i))));
  }

  const membership::LatencyHistogram& h = in.totals.round_latency;
  w.family("ddp_rdzv_round_latency_seconds", "histogram",
           "Time from a round starting to form (first JOIN, or the stop before a restart) to its "
           "completion.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.kBounds.size(); ++i) {
    cumulative += h.buckets[i];
    w.sample("ddp_rdzv_round_latency_seconds_bucket", cumulative,
             label("le", number(h.kBounds[i])));
  }
  w.sample("ddp_rdzv_round_latency_seconds_bucket", h.count, label("le", "+Inf"));
  w.sample("ddp_rdzv_round_latency_seconds_sum", h.sum_seconds);
  w.sample("ddp_rdzv_round_latency_seconds_count", h.count);

  w.family("ddp_rdzv_connections", "gauge", "Open store and rendezvous connections.");
  w.sample("ddp_rdzv_connections", std::uint64_t{in.server.connections});
  w.family("ddp_rdzv_store_keys", "gauge", "Keys in the store (values; queues apart).");
  w.sample("ddp_rdzv_store_keys", static_cast<std::uint64_t>(in.server.keys));
  w.family("ddp_rdzv_store_queues", "gauge", "Non-empty queues in the store.");
  w.sample("ddp_rdzv_store_queues", std::uint64_t{in.server.queues});
  w.family("ddp_rdzv_store_bytes", "gauge", "Bytes of keys and values held by the store.");
  w.sample("ddp_rdzv_store_bytes", in.server.bytes);
  w.family("ddp_rdzv_store_parked_waits", "gauge", "WAITs parked until their keys are written.");
  w.sample("ddp_rdzv_store_parked_waits", std::uint64_t{in.server.parked_waits});
  w.family("ddp_rdzv_store_ops_total", "counter", "TCPStore requests served, by operation.");
  for (std::size_t i = 0; i < kOpCount; ++i) {
    w.sample("ddp_rdzv_store_ops_total", in.server.ops[i],
             label("op", op_name(static_cast<Op>(i))));
  }
  w.family("ddp_rdzv_native_requests_total", "counter",
           "Native rendezvous requests served (JOIN, heartbeats, reports).");
  w.sample("ddp_rdzv_native_requests_total", in.server.native_requests);

  w.family("ddp_rdzv_status_connections", "gauge", "Open connections to this status port.");
  w.sample("ddp_rdzv_status_connections", in.http.open_connections);
  w.family("ddp_rdzv_status_requests_total", "counter",
           "HTTP requests answered by this status port.");
  w.sample("ddp_rdzv_status_requests_total", in.http.requests);
  w.family("ddp_rdzv_status_rejected_total", "counter",
           "Status connections refused (over the cap) or closed for a malformed, oversized or slow "
           "request.");
  w.sample("ddp_rdzv_status_rejected_total", in.http.rejected_connections + in.http.bad_requests);

  w.family("process_resident_memory_bytes", "gauge", "Resident memory of the daemon's process.");
  w.sample("process_resident_memory_bytes", in.process.rss_bytes);
  w.family("process_cpu_seconds_total", "counter",
           "User and system CPU time of the daemon's process.");
  w.sample("process_cpu_seconds_total", in.process.cpu_seconds);
  w.family("process_open_fds", "gauge", "Open file descriptors of the daemon's process.");
  w.sample("process_open_fds", in.process.open_fds);
  return out;
}

}  // namespace ddp::rendezvous::status
