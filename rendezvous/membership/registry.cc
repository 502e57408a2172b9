#include "rendezvous/membership/registry.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace ddp::rendezvous::membership {
namespace {

inline constexpr std::size_t kMaxRunIdBytes = 1024;

Status validate_join(const JoinRequest& r) {
  if (r.run_id.empty() || r.run_id.size() > kMaxRunIdBytes) {
    return invalid_argument("run id must be 1.." + std::to_string(kMaxRunIdBytes) +
                            " bytes; pass --rdzv-id ID");
  }
  if (r.node.addr.empty()) {
    return invalid_argument("node " + r.node.node_key +
                            " advertises an empty address; pass --local-addr ADDR");
  }
  if (r.node.local_world_size < 1) {
    return invalid_argument("node " + r.node.node_key +
                            " has local_world_size 0; pass --nproc-per-node N with N >= 1");
  }
  if (r.node_rank && r.config.min_nodes != r.config.max_nodes) {
    return invalid_argument("node " + r.node.node_key + " pins node rank " +
                            std::to_string(*r.node_rank) + " but --nnodes " +
                            std::to_string(r.config.min_nodes) + ":" +
                            std::to_string(r.config.max_nodes) +
                            " is elastic; static rendezvous needs one node count (--nnodes N)");
  }
  return validate(r.config);
}

Event error_to(NodeId conn, Status s) { return {conn, ErrorEvent{s.code(), s.message()}}; }

}  // namespace

Registry::Registry(RegistryOptions options) : options_(std::move(options)) {}

const Job* Registry::find(std::string_view run_id) const {
  auto it = jobs_.find(std::string(run_id));
  return it == jobs_.end() ? nullptr : it->second.job.get();
}

Job* Registry::job_of(NodeId conn) {
  auto c = conn_job_.find(conn);
  if (c == conn_job_.end()) return nullptr;
  auto j = jobs_.find(c->second);
  return j == jobs_.end() ? nullptr : j->second.job.get();
}

std::vector<const Job*> Registry::jobs() const {
  std::vector<const Job*> out;
  out.reserve(jobs_.size());
  for (const auto& [run_id, entry] : jobs_) out.push_back(entry.job.get());
  std::sort(out.begin(), out.end(),
            [](const Job* a, const Job* b) { return a->run_id() < b->run_id(); });
  return out;
}

std::size_t Registry::connections(const std::string& run_id) const {
  auto it = bound_.find(run_id);
  if (it == bound_.end()) return 0;
  const Job* job = find(run_id);
  return it->second - (job != nullptr ? job->removed_count() : 0);
}

void Registry::bind(NodeId conn, const std::string& run_id) {
  unbind(conn);
  conn_job_[conn] = run_id;
  ++bound_[run_id];
}

void Registry::unbind(NodeId conn) {
  auto c = conn_job_.find(conn);
  if (c == conn_job_.end()) return;
  auto b = bound_.find(c->second);
  if (b != bound_.end() && --b->second == 0) bound_.erase(b);
  conn_job_.erase(c);
}

Events Registry::join(NodeId conn, JoinRequest request, TimePoint now) {
  if (Status s = validate_join(request); !s) return {error_to(conn, s)};
  if (Job* bound = job_of(conn); bound && bound->has_node(conn)) {
    return {error_to(conn, invalid_argument("this connection already joined job '" +
                                            bound->run_id() + "'; open one connection per agent"))};
  }
  auto [it, created] = jobs_.try_emplace(request.run_id);
  if (created) {
    it->second.job =
        std::make_unique<Job>(request.run_id, request.config, request.node_rank.has_value(), now);
    if (auto r = options_.resume.find(request.run_id); r != options_.resume.end()) {
      it->second.job->resume(r->second);
    }
    ++totals_.jobs_created;
  } else if (it->second.job->state() != Job::State::kFinished) {
    const std::string diff = config_mismatch(request.config, it->second.job->config());
    if (!diff.empty()) {
      return {error_to(
          conn,
          invalid_argument("node " + request.node.node_key + " joins job '" + request.run_id +
                           "' with a different configuration: " + diff +
                           "; every node must pass the same --nnodes, --max-restarts,"
                           " --max-no-progress-restarts, --no-progress-exit-code, --straggler-*"
                           " and --rdzv-conf"))};
    }
  }
  Events out;
  Job& job = *it->second.job;
  job.join(conn, std::move(request.node), request.node_rank, now, out);
  if (job.has_node(conn)) bind(conn, job.run_id());
  update(job.run_id());
  return out;
}

Events Registry::handle(NodeId conn, Request request, TimePoint now) {
  if (auto* join_request = std::get_if<JoinRequest>(&request)) {
    return join(conn, std::move(*join_request), now);
  }
  Job* job = job_of(conn);
  if (job == nullptr) {
    return {error_to(conn, invalid_argument("this connection has not joined a job; send JOIN"
                                            " before any other rendezvous request"))};
  }
  if (!job->has_node(conn) && job->state() != Job::State::kFinished) {
    // Removed by the daemon (missed heartbeats, stop timeout): refuse, saying why, so the
    // agent stops its workers instead of waiting for a job that goes on without it.
    const std::string* why = job->removal(conn);
    return {error_to(conn, peer_gone(why ? "request refused: " + *why
                                         : "request refused: this connection is no longer a "
                                           "member of job '" +
                                               job->run_id() +
                                               "'; start the "
                                               "agent again to rejoin"))};
  }
  Events out;
  std::visit(
      [&](auto&& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, Heartbeat>) {
          job->heartbeat(conn, now);
        } else if constexpr (std::is_same_v<T, ReportFailure>) {
          job->report_failure(conn, r.round, std::move(r.failures), now, out);
        } else if constexpr (std::is_same_v<T, WorkersStopped>) {
          job->workers_stopped(conn, r.round, now, out);
        } else if constexpr (std::is_same_v<T, ReportSuccess>) {
          job->report_success(conn, r.round, now, out);
        } else if constexpr (std::is_same_v<T, QueryWaiting>) {
          job->query_waiting(conn, now, out);
        } else if constexpr (std::is_same_v<T, Progress>) {
          job->progress(conn, r.round, r.stepping, r.ranks, now, out);
        } else if constexpr (std::is_same_v<T, Leave>) {
          job->remove_node(conn, GoneReason::kLeft, r.reason, now, out);
          unbind(conn);
        }
      },
      request);
  update(job->run_id());
  return out;
}

Events Registry::connection_closed(NodeId conn, TimePoint now) {
  Events out;
  Job* job = job_of(conn);
  unbind(conn);
  if (job == nullptr) return out;
  job->forget(conn);
  job->remove_node(conn, GoneReason::kConnectionClosed, "", now, out);
  update(job->run_id());
  return out;
}

void Registry::update(std::string run_id) {
  auto it = jobs_.find(run_id);
  if (it == jobs_.end()) return;
  Entry& e = it->second;
  // What the input changed in the job's counters goes into the daemon-wide totals.
  const JobCounters& now_counted = e.job->counters();
  if (now_counted.rounds_completed > e.counted.rounds_completed) {
    totals_.rounds_completed += now_counted.rounds_completed - e.counted.rounds_completed;
    totals_.round_latency.observe(now_counted.last_round_latency);
  }
  totals_.restarts += now_counted.restarts - e.counted.restarts;
  for (std::size_t i = 0; i < kFailureCauseCount; ++i) {
    totals_.failures[i] += now_counted.failures[i] - e.counted.failures[i];
  }
  e.counted = now_counted;
  if (e.scheduled) deadlines_.erase({*e.scheduled, run_id});
  e.scheduled.reset();
  const Job& job = *e.job;
  if (job.state() == Job::State::kPending && job.node_count() == 0 && job.round() == 1) {
    jobs_.erase(it);  // everyone left before it ever ran: nothing to remember
    return;
  }
  e.scheduled = job.state() == Job::State::kFinished
                    ? std::optional<TimePoint>(job.finished_at() + options_.finished_retention)
                    : job.next_deadline();
  if (e.scheduled) deadlines_.emplace(*e.scheduled, run_id);
}

std::optional<TimePoint> Registry::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

void Registry::pardon(TimePoint now) {
  std::vector<std::string> running;
  for (auto& [run_id, entry] : jobs_) {
    if (entry.job->state() == Job::State::kFinished) continue;
    entry.job->pardon(now);
    running.push_back(run_id);
  }
  for (const std::string& run_id : running) update(run_id);
}

Events Registry::on_deadline(TimePoint now) {
  // Collect first, then run each due job once: a job re-filed at or before `now` waits for
  // the next call instead of spinning here.
  std::vector<std::string> due;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    due.push_back(deadlines_.begin()->second);
    jobs_.at(due.back()).scheduled.reset();
    deadlines_.erase(deadlines_.begin());
  }
  Events out;
  for (const std::string& run_id : due) {
    Job& job = *jobs_.at(run_id).job;
    if (job.state() == Job::State::kFinished) {
      jobs_.erase(run_id);  // retention over: the id is free again
      continue;
    }
    job.on_deadline(now, out);
    update(run_id);
  }
  return out;
}

}  // namespace ddp::rendezvous::membership
