#include "rendezvous/status/status_source.h"

#include "rendezvous/status/process_stats.h"

namespace ddp::rendezvous::status {

MetricsInput DaemonStatusSource::metrics() const {
  MetricsInput in;
  const membership::Registry& registry = server_.registry();
  for (const membership::Job* job : registry.jobs()) {
    membership::JobView v = job->view(/*full=*/false);
    v.connections = registry.connections(job->run_id());
    in.jobs.push_back(std::move(v));
  }
  in.now = membership::Clock::now();
  in.totals = registry.totals();
  in.server = server_.stats();
  in.process = read_process_stats();
  in.http = http_;
  return in;
}

std::vector<membership::JobView> DaemonStatusSource::jobs() const {
  std::vector<membership::JobView> out;
  for (const membership::Job* job : server_.registry().jobs()) out.push_back(job->view());
  return out;
}

std::optional<membership::JobView> DaemonStatusSource::job(std::string_view run_id) const {
  const membership::Job* job = server_.registry().find(run_id);
  if (job == nullptr) return std::nullopt;
  return job->view();
}

Clocks DaemonStatusSource::clocks() const {
  return {membership::Clock::now(), std::chrono::system_clock::now()};
}

}  // namespace ddp::rendezvous::status
