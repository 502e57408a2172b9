// The end of an etcd job as its agents recorded it (P/finished, docs/etcd.md), for the
// launching ddprun of a fan-out with --rdzv-backend etcd: it hosts no rendezvous, so the job's
// exit code and root cause come from etcd. Blocking (a private io_context), bounded by
// `timeout` across the endpoints; any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "agent/membership/etcd_settings.h"
#include "rendezvous/membership/messages.h"

namespace ddp::launcher::fanout {

// nullopt while the job has not finished, or when etcd cannot be read in time (logged).
std::optional<rendezvous::membership::JobFinished> read_etcd_outcome(
    const agent::EtcdSettings& settings, const std::string& run_id,
    std::chrono::milliseconds timeout);

}  // namespace ddp::launcher::fanout
