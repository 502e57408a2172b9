// Every job the daemon serves, keyed by run id (the standalone `ddp-rendezvous` serves many at
// once; the embedded daemon usually one). Routes each connection's requests to its job,
// creates a job on its first JOIN, checks that later JOINs carry the same config, and keeps a
// finished job for `finished_retention` so late joiners get a clear "job finished" error
// rather than silently starting a new job under the same id.
//
// Pure like Job: injected time, events out, one timer at next_deadline(). A NodeId is the
// session's connection id (unique for the daemon's lifetime). Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rendezvous/membership/job.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous::membership {

struct RegistryOptions {
  std::chrono::milliseconds finished_retention = std::chrono::minutes(30);
  // Jobs taken over, by run id: a job created by its first JOIN resumes there.
  std::unordered_map<std::string, ResumePoint> resume;
};

class Registry {
 public:
  explicit Registry(RegistryOptions options = {});

  // One decoded request from connection `conn`. A request other than JOIN from a connection
  // that has not joined gets a kInvalidArgument ErrorEvent.
  Events handle(NodeId conn, Request request, TimePoint now);
  // The session saw the connection close (EOF, error, or its own shutdown of it).
  Events connection_closed(NodeId conn, TimePoint now);

  std::optional<TimePoint> next_deadline() const;
  Events on_deadline(TimePoint now);
  // The daemon itself was paused until `now` (its timer fired far too late): every running
  // job's nodes get a fresh heartbeat budget (Job::pardon). O(nodes); call only on a pause.
  void pardon(TimePoint now);

  // Observers (status endpoints, tests). nullptr when unknown (or erased after retention).
  const Job* find(std::string_view run_id) const;
  // Open connections of `run_id`'s nodes: joined it and neither LEFT, closed nor removed by
  // the daemon since, whatever the job's state (a finished job's nodes count until they
  // close).
  std::size_t connections(const std::string& run_id) const;
  // Every job known now (finished ones until their retention ends), by run id.
  std::vector<const Job*> jobs() const;
  // Counters summed over every job of the daemon's life, erased ones included.
  const RegistryTotals& totals() const { return totals_; }

 private:
  struct Entry {
    std::unique_ptr<Job> job;
    std::optional<TimePoint> scheduled;  // the key this job has in deadlines_
    JobCounters counted;                 // the job's counters already added to totals_
  };

  Events join(NodeId conn, JoinRequest request, TimePoint now);
  Job* job_of(NodeId conn);
  void bind(NodeId conn, const std::string& run_id);
  void unbind(NodeId conn);
  // Re-files the job's deadline after an input; erases an empty job that never ran.
  void update(std::string run_id);  // a copy: the job owning the string may be erased

  RegistryOptions options_;
  std::unordered_map<std::string, Entry> jobs_;
  std::unordered_map<NodeId, std::string> conn_job_;
  std::unordered_map<std::string, std::size_t> bound_;  // run id -> connections in conn_job_
  std::set<std::pair<TimePoint, std::string>> deadlines_;
  RegistryTotals totals_;
};

}  // namespace ddp::rendezvous::membership
