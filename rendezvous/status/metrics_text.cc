#include "rendezvous/status/metrics_text.h"

#include <array>
#include <charconv>
#include <system_error>

#include "rendezvous/protocol.h"

namespace ddp::rendezvous::status {
namespace {

using membership::JobView;

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
template <typename Rep, typename Period>
double seconds(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration<double>(d).count();
}

std::string label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + escape_label(value) + "\"";
}

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
  // A family of one sample without labels.
  template <typename V>
  void single(std::string_view name, std::string_view type, std::string_view help, V value) {
    family(name, type, help);
    sample(name, value);
  }
  // A gauge with one sample per job (labelled run_id): value_of(job).
  template <typename F>
  void per_job(std::string_view name, std::string_view help, const std::vector<JobView>& jobs,
               F value_of) {
    family(name, "gauge", help);
    for (const JobView& j : jobs) sample(name, value_of(j), label("run_id", j.run_id));
  }

 private:
  std::string& out_;
};

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
    for (const JobView& j : in.jobs) n += j.state == state ? 1 : 0;
    w.sample("ddp_rdzv_jobs", n, label("state", membership::state_name(state)));
  }
  w.single("ddp_rdzv_jobs_created_total", "counter",
           "Jobs created by a first JOIN since the daemon started.", in.totals.jobs_created);

  w.per_job("ddp_rdzv_job_nodes", "Nodes in a job now (participants, waiting and joining).",
            in.jobs, [](const JobView& j) { return std::uint64_t{j.node_count}; });
  w.per_job("ddp_rdzv_job_workers", "Workers (world size) of a job's last completed round.",
            in.jobs, [](const JobView& j) { return j.world_size; });
  w.per_job("ddp_rdzv_job_round", "A job's current round number (from 1).", in.jobs,
            [](const JobView& j) { return j.round; });
  w.per_job("ddp_rdzv_job_restarts",
            "A job's restart count (TORCHELASTIC_RESTART_COUNT of its workers).", in.jobs,
            [](const JobView& j) { return std::uint64_t{j.restart_count}; });
  w.per_job("ddp_rdzv_job_max_restarts", "A job's restart limit (--max-restarts).", in.jobs,
            [](const JobView& j) { return std::uint64_t{j.config.max_restarts}; });
  w.per_job("ddp_rdzv_job_connections", "Open agent connections bound to a job.", in.jobs,
            [](const JobView& j) { return j.connections; });

  w.per_job("ddp_rdzv_job_goodput_ratio",
            "A job's time with workers stepping over its wall time since its first join "
            "(docs/goodput.md).",
            in.jobs, [&in](const JobView& j) { return j.goodput(in.now).ratio(); });
  w.per_job("ddp_rdzv_job_stepping_seconds",
            "A job's time with workers stepping, summed over its rounds (docs/goodput.md).",
            in.jobs, [](const JobView& j) { return seconds(j.steps.stepping); });

  w.per_job("ddp_rdzv_job_stragglers",
            "Ranks of a job's round flagged as stragglers (docs/stragglers.md).", in.jobs,
            [](const JobView& j) { return std::uint64_t{j.steps.stragglers}; });
  w.per_job("ddp_rdzv_job_median_step_seconds",
            "The median of a job's ranks' step times this round (0 until known).", in.jobs,
            [](const JobView& j) { return seconds(j.steps.median_step_time); });
  w.family("ddp_rdzv_rank_step_seconds", "gauge",
           "Step time of a job's flagged ranks (the first 32 by rank).");
  for (const JobView& j : in.jobs) {
    for (const membership::RankStepView& r : j.steps.straggler_ranks) {
      w.sample("ddp_rdzv_rank_step_seconds", seconds(r.step_time),
               label("run_id", j.run_id) + "," + label("rank", std::to_string(r.rank)));
    }
  }
  w.single("ddp_rdzv_rounds_total", "counter", "Rendezvous rounds completed, every job.",
           in.totals.rounds_completed);
  w.single("ddp_rdzv_restarts_total", "counter",
           "Restarts counted against --max-restarts, every job.", in.totals.restarts);
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

  w.single("ddp_rdzv_connections", "gauge", "Open store and rendezvous connections.",
           std::uint64_t{in.server.connections});
  w.single("ddp_rdzv_store_keys", "gauge", "Keys in the store (values; queues apart).",
           static_cast<std::uint64_t>(in.server.keys));
  w.single("ddp_rdzv_store_queues", "gauge", "Non-empty queues in the store.",
           std::uint64_t{in.server.queues});
  w.single("ddp_rdzv_store_bytes", "gauge", "Bytes of keys and values held by the store.",
           in.server.bytes);
  w.single("ddp_rdzv_store_parked_waits", "gauge", "WAITs parked until their keys are written.",
           std::uint64_t{in.server.parked_waits});
  w.family("ddp_rdzv_store_ops_total", "counter", "TCPStore requests served, by operation.");
  for (std::size_t i = 0; i < kOpCount; ++i) {
    w.sample("ddp_rdzv_store_ops_total", in.server.ops[i],
             label("op", op_name(static_cast<Op>(i))));
  }
  w.single("ddp_rdzv_native_requests_total", "counter",
           "Native rendezvous requests served (JOIN, heartbeats, reports).",
           in.server.native_requests);

  w.single("ddp_rdzv_status_connections", "gauge", "Open connections to this status port.",
           in.http.open_connections);
  w.single("ddp_rdzv_status_requests_total", "counter",
           "HTTP requests answered by this status port.", in.http.requests);
  w.single("ddp_rdzv_status_rejected_total", "counter",
           "Status connections refused (over the cap) or closed for a malformed, oversized or slow "
           "request.",
           in.http.rejected_connections + in.http.bad_requests);

  w.single("process_resident_memory_bytes", "gauge", "Resident memory of the daemon's process.",
           in.process.rss_bytes);
  w.single("process_cpu_seconds_total", "counter",
           "User and system CPU time of the daemon's process.", in.process.cpu_seconds);
  w.single("process_open_fds", "gauge", "Open file descriptors of the daemon's process.",
           in.process.open_fds);
  return out;
}

}  // namespace ddp::rendezvous::status
