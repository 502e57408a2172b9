#include "rendezvous/etcd_hub/etcd_takeover.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace ddp::rendezvous {

std::string encode_job_state(const JobState& state) {
  etcd::Json roster = etcd::Json::array();
  for (const auto& e : state.roster) roster.push_back(etcd::Json::array({e.node_key, e.id}));
  return etcd::Json{{"round", state.round},
                    {"restart_count", state.restart_count},
                    {"departures", state.departures},
                    {"roster", std::move(roster)}}
      .dump();
}

std::optional<JobState> decode_job_state(const etcd::KeyValue& kv) {
  etcd::Json j = etcd::Json::parse(kv.value, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  JobState s;
  try {
    s.round = j.value("round", std::uint64_t{0});
    s.restart_count = j.value("restart_count", 0u);
    s.departures = j.value("departures", 0u);
    if (auto r = j.find("roster"); r != j.end() && r->is_array()) {
      for (const auto& e : *r) {
        s.roster.push_back(
            {e.at(0).get<std::string>(), e.at(1).get<rendezvous::membership::NodeId>()});
      }
    }
  } catch (const etcd::Json::exception&) {
    return std::nullopt;
  }
  s.revision = kv.mod_revision;
  return s;
}

TakeoverPlan plan_takeover(const EtcdKeys& keys, const std::optional<JobState>& state,
                           const std::vector<etcd::KeyValue>& nodes,
                           const std::vector<etcd::KeyValue>& requests,
                           std::int64_t gone_revision) {
  TakeoverPlan plan;
  std::vector<bool> in_roster(nodes.size(), false);
  if (state) {
    for (const auto& entry : state->roster) {
      std::optional<std::size_t> found;
      for (std::size_t i = 0; i < nodes.size() && !found; ++i) {
        auto key = keys.node_of(nodes[i].key);
        if (key && *key == entry.node_key &&
            static_cast<rendezvous::membership::NodeId>(nodes[i].create_revision) == entry.id) {
          found = i;
        }
      }
      if (found) {
        in_roster[*found] = true;
        plan.resume_running = true;
      }
      plan.roster_nodes.push_back(found);
    }
  }
  if (!plan.resume_running) plan.roster_nodes.clear();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!in_roster[i]) plan.steps.push_back({ReplayStep::Kind::kJoin, nodes[i].create_revision, i});
  }
  if (plan.resume_running) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].mod_revision > state->revision && keys.requester_of(requests[i].key)) {
        plan.steps.push_back({ReplayStep::Kind::kRequest, requests[i].mod_revision, i});
      }
    }
    const std::int64_t gone =
        gone_revision > 0 ? gone_revision : std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < plan.roster_nodes.size(); ++i) {
      if (!plan.roster_nodes[i]) plan.steps.push_back({ReplayStep::Kind::kGone, gone, i});
    }
  }
  // Revision order; at one revision, inputs before losses (a loss is seen after the writes
  // that share its revision), then by index (roster order for losses).
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const ReplayStep& a, const ReplayStep& b) {
                     const bool ga = a.kind == ReplayStep::Kind::kGone;
                     const bool gb = b.kind == ReplayStep::Kind::kGone;
                     return std::tie(a.revision, ga) < std::tie(b.revision, gb);
                   });
  return plan;
}

}  // namespace ddp::rendezvous
