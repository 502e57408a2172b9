// P/state's value (docs/etcd.md): the job's facts the etcd host records at every round, what a
// newly elected host's daemon resumes from (Job::resume). JSON, readable with etcdctl:
//   {"round":7,"restart_count":1,"departures":1,"ranks":["10.0.0.2:4711","",...],
//    "best_step":1200,"no_progress_restarts":0,"stepping_ms":5400,"started_ms":1795...}
// "round" is the recorded round (the successor resumes at the next one), "ranks" the node keys
// by group rank ("": gone; ~20 bytes a node), "started_ms" the job's first JOIN (wall clock, ms
// since the epoch). A field left out (an older ddprun's record) reads as none or 0. Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "rendezvous/membership/job.h"

namespace ddp::agent {

using WallClock = std::chrono::system_clock;

// `at` as recorded at wall time `now` (at.round: the next round, at.age: the job's age now).
std::string encode_state(const rendezvous::membership::ResumePoint& at, WallClock::time_point now);
// The inverse at wall time `now` (age from "started_ms", never negative); nullopt when `value`
// is not ddprun's record (not a JSON object, or a field of the wrong type).
std::optional<rendezvous::membership::ResumePoint> decode_state(const std::string& value,
                                                                WallClock::time_point now);

}  // namespace ddp::agent
