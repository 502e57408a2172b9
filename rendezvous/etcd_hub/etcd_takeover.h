// What a coordinator that takes over an etcd job replays into its membership::Job
// (docs/etcd.md, "Takeover"). Pure: no I/O.
//
// P/state holds the job's durable facts, written in the txn that carries a round's
// RoundComplete: the round, the restart count, the departures and the round's participants
// (node key and NodeId, by group rank). Its mod_revision is where that round began.
// A new coordinator resumes that round *running* with its participants, then replays, in
// revision order:
//   - the JOINs of present nodes that are not participants (late joiners);
//   - every request key written since the round began (reports, stop answers, LEAVE);
//   - the loss of each participant whose node key is gone (the old coordinator's node, at the
//     revision its key was seen deleted; after everything else when that is unknown).
// So a failure reported while the coordinator was being replaced moves the restart count
// once, as the old coordinator would have, and a node lost before it re-forms the job as a
// departure; a failure after the loss is part of that stop (the Job's rules).
// Without a roster in P/state (none written yet), or with none of its participants present,
// the job resumes at the next round with the nodes present (their JOINs only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etcd/codec.h"
#include "rendezvous/etcd_hub/etcd_keys.h"
#include "rendezvous/membership/messages.h"

namespace ddp::rendezvous {

struct RosterEntry {
  std::string node_key;
  rendezvous::membership::NodeId id = 0;  // its node key's create_revision
};

struct JobState {
  std::uint64_t round = 0;
  std::uint32_t restart_count = 0;
  std::uint32_t departures = 0;
  std::vector<RosterEntry> roster;  // the round's participants by group rank
  std::int64_t revision = 0;        // P/state's mod_revision: where the round began
};

std::string encode_job_state(const JobState& state);
// nullopt when the value is not ddprun's job state.
std::optional<JobState> decode_job_state(const etcd::KeyValue& kv);

struct ReplayStep {
  enum class Kind : std::uint8_t { kJoin, kRequest, kGone };
  Kind kind = Kind::kJoin;
  std::int64_t revision = 0;
  std::size_t index = 0;  // into nodes (kJoin), requests (kRequest), state->roster (kGone)
};

struct TakeoverPlan {
  // True: resume state->round running; roster_nodes[i] is the index in `nodes` of roster
  // entry i, or nullopt when that node is gone (a kGone step removes it).
  bool resume_running = false;
  std::vector<std::optional<std::size_t>> roster_nodes;
  std::vector<ReplayStep> steps;  // in revision order
};

// `nodes`: the present P/nodes/ keys; `requests`: the present P/req/ keys (one read);
// `gone_revision`: the revision at which the old coordinator's key was seen deleted (0:
// unknown).
TakeoverPlan plan_takeover(const EtcdKeys& keys, const std::optional<JobState>& state,
                           const std::vector<etcd::KeyValue>& nodes,
                           const std::vector<etcd::KeyValue>& requests, std::int64_t gone_revision);

}  // namespace ddp::rendezvous
