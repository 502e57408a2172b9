// Test driver for the membership registry: a fake clock that only moves when told, node
// helpers, and event filters. run_until() fires deadlines the way the daemon's one timer
// would: at next_deadline(), in order.
#pragma once

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/membership/registry.h"

namespace ddp::rendezvous::membership::test {

using namespace std::chrono_literals;

class Harness {
 public:
  Config config;
  Registry registry;
  TimePoint now = TimePoint{} + 1h;  // arbitrary origin: nothing may depend on it

  Harness() {
    config.min_nodes = 2;
    config.max_nodes = 4;
    config.max_restarts = 3;
    config.join_timeout = 60s;
    config.last_call_timeout = 5s;
    config.close_timeout = 10s;
    config.keep_alive_interval = 10s;  // 30 s budget; heartbeat tests set their own
    config.keep_alive_max_attempt = 3;
  }

  static NodeInfo info(NodeId id, std::uint32_t local_world_size = 1) {
    return {"host-" + std::to_string(id), "10.0.0." + std::to_string(id),
            static_cast<std::uint16_t>(29500 + id), local_world_size};
  }

  Events join(NodeId id, std::uint32_t local_world_size = 1, const std::string& run = "job") {
    return registry.handle(id, JoinRequest{run, config, info(id, local_world_size)}, now);
  }
  Events send(NodeId id, Request r) { return registry.handle(id, std::move(r), now); }
  Events heartbeat(NodeId id) { return send(id, Heartbeat{}); }
  Events close(NodeId id) { return registry.connection_closed(id, now); }

  // Fires every deadline up to `until` (inclusive) in time order, then sets now = until.
  Events run_until(TimePoint until) {
    Events all;
    while (auto next = registry.next_deadline()) {
      if (*next > until) break;
      now = std::max(now, *next);
      Events e = registry.on_deadline(now);
      all.insert(all.end(), e.begin(), e.end());
    }
    now = std::max(now, until);
    return all;
  }
  Events run_for(Duration d) { return run_until(now + d); }

  const Job& job(const std::string& run = "job") const {
    const Job* j = registry.find(run);
    if (j == nullptr) throw std::runtime_error("the registry has no job '" + run + "'");
    return *j;
  }
};

// The payloads of type T in `events`, with their recipients, in order.
template <typename T>
std::vector<std::pair<NodeId, T>> of_type(const Events& events) {
  std::vector<std::pair<NodeId, T>> out;
  for (const Event& e : events) {
    if (const T* p = std::get_if<T>(&e.payload)) out.emplace_back(e.to, *p);
  }
  return out;
}

// The one payload of type T addressed to `id`; fails the test when there is not exactly one.
template <typename T>
T only_for(const Events& events, NodeId id) {
  std::vector<T> found;
  for (const auto& [to, p] : of_type<T>(events)) {
    if (to == id) found.push_back(p);
  }
  if (found.size() != 1) {
    throw std::runtime_error("expected exactly one event of the type for node " +
                             std::to_string(id) + ", got " + std::to_string(found.size()));
  }
  return found.front();
}

inline Failure failure(std::uint32_t rank, std::int32_t exit_code, std::int64_t unix_us) {
  Failure f;
  f.rank = rank;
  f.local_rank = rank;
  f.exit_code = exit_code;
  f.pid = 1000 + rank;
  f.time = WallTime(std::chrono::microseconds(unix_us));
  f.message = "RuntimeError: rank " + std::to_string(rank);
  return f;
}

}  // namespace ddp::rendezvous::membership::test
