// What the event log tests share: a sink that captures the lines, the origin every line of a
// log names (job-7 on node-a), a fixed clock, and a failure as it comes over the wire.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/report/event_log.h"
#include "agent/report/event_sink.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent::event_log_fixture {

namespace membership = rendezvous::membership;

// 2026-11-24T22:35:00.123Z
inline const std::chrono::system_clock::time_point kT0{std::chrono::milliseconds(1795559700123)};

// Appends every line to a vector the test owns (and outlives the sink).
class CaptureSink final : public EventSink {
 public:
  explicit CaptureSink(std::vector<std::string>& lines) : lines_(lines) {}
  void write_line(std::string_view line) override { lines_.emplace_back(line); }

 private:
  std::vector<std::string>& lines_;
};

inline EventOrigin origin() {
  EventOrigin o;
  o.run_id = "job-7";
  o.host = "node-a";
  o.agent_pid = 4242;
  o.backend = "c10d";
  o.endpoint = "10.0.0.1:29400";
  o.job.min_nodes = 2;
  o.job.max_nodes = 3;
  o.nproc_per_node = 4;
  o.job.max_restarts = 1;
  return o;
}

inline membership::Failure wire_failure(std::int32_t exit_code) {
  membership::Failure f;
  f.node_key = "10.0.0.2:777";
  f.group_rank = 1;
  f.local_rank = 2;
  f.rank = 6;
  f.exit_code = exit_code;
  f.pid = 991;
  f.time = membership::WallTime(std::chrono::microseconds(1795559700500000));
  f.error_file = "/logs/attempt_1/2/error.json";
  f.message = "RuntimeError: boom";
  return f;
}

}  // namespace ddp::agent::event_log_fixture
