// Connection limits of the store server (docs/security.md, "Connection limits"): caps on open
// connections in total and per peer address (what is left of the open-file limit after a reserve
// of descriptors), the deadline for a connection's first complete request, and the networks
// whose peers may use the TCPStore operations. Pure: the caps are derived from the open-file
// limit the caller passes in.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "rendezvous/store_allow.h"

namespace ddp::rendezvous {

struct ConnectionLimits {
  // 0: derived from the open-file limit (resolve_caps).
  std::size_t max_connections = 0;
  std::size_t max_per_peer = 0;
  // Deadline for a connection's first complete request, from its accept. One that sent part of
  // a request by then is closed; one that sent nothing is kept, like an idle connection after
  // its first request (a PyTorch 1.13 client's watch connection never writes; the caps bound
  // what such connections can hold). Zero turns the deadline off. After its first request a
  // connection may stay idle for ever: PyTorch workers hold their store connection silently
  // through the whole training run.
  std::chrono::milliseconds first_request_timeout = std::chrono::seconds(10);
  // Empty: TCPStore operations from anywhere. Otherwise a peer outside every network that sends
  // a TCPStore operation touching keys is disconnected (VALIDATE and PING stay allowed, and so
  // do the native rendezvous requests of agents).
  StoreAllow store_allow;
};

// The caps in force (never 0).
struct ConnectionCaps {
  std::size_t max_connections = 0;
  std::size_t max_per_peer = 0;
};

// Descriptors kept back from the connection cap for everything else the process opens (log
// files, the port file, an agent's worker pipes, the accept loop's spare descriptor):
// max(64, nofile / 8).
std::size_t reserved_descriptors(std::uint64_t nofile);

// The caps for an open-file limit of `nofile`: max_connections defaults to nofile minus the
// reserve, max_per_peer to max_connections minus min(half of it, 1024): one address can never
// take every slot, and a single-host run of thousands of workers still fits a large limit.
// A limit no larger than the reserve gives half of it. Errors (kInvalidArgument, one line
// naming the flag and the fix): a cap above what the limit allows, a per-peer cap above the
// total.
Result<ConnectionCaps> resolve_caps(const ConnectionLimits& limits, std::uint64_t nofile);

// The connection flags of ddp-rendezvous (and of ddprun, for the servers it hosts) as given on
// the command line.
struct ConnectionFlags {
  std::size_t max_connections = 0;      // --max-connections, 0 = derived
  std::size_t max_per_peer = 0;         // --max-connections-per-peer, 0 = derived
  double first_request_timeout_s = 10;  // --first-request-timeout, seconds, 0 = off
  std::string store_allow;              // --store-allow, empty = everywhere
};

// Validates the flags into limits. Errors (kInvalidArgument, one line naming the flag and the
// fix): a timeout that is negative, non-finite or above 86400 s, a per-peer cap above the
// total, a bad --store-allow.
Result<ConnectionLimits> connection_limits_from_flags(const ConnectionFlags& flags);

// The soft RLIMIT_NOFILE of this process (a large number when unlimited).
std::uint64_t open_file_limit();

}  // namespace ddp::rendezvous
