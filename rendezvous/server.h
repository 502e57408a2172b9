// The store server: a TCPStore-compatible listener (both PyTorch numberings) that
// serves one in-memory Store, plus ddprun's native rendezvous requests (every job of a
// rendezvous::membership::Registry, keyed by run id; rendezvous/framer.h, native_hub.h). Used by
// the `ddp-rendezvous` daemon and embedded in ddprun agents (and the launching ddprun of a
// fan-out): an agent that hosts the rendezvous starts one on its own io_context and its
// RdzvClient connects to it like any other node's; the worker store is a second Server that
// simply never sees native requests (with the static backend the daemon is the workers' store
// too).
//
// Every Server enforces ServerOptions::connections (rendezvous/connection_limits.h): caps per
// peer and in total, checked as connections are accepted, and the first-request deadline.
//
// Threading: everything runs on the io_context passed to start(); only that
// io_context's single thread may call stop() or destroy the Server. No locks.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "rendezvous/connection_limits.h"
#include "rendezvous/limits.h"
#include "rendezvous/membership/registry.h"
#include "rendezvous/native_hub.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous {

struct ServerOptions {
  std::string host;            // bind address; empty = all interfaces (IPv6 dual-stack, else IPv4)
  std::uint16_t port = 29400;  // 0 picks a free port
  Limits limits;
  ConnectionLimits connections;                      // caps, first-request deadline, --store-allow
  rendezvous::membership::RegistryOptions registry;  // how long finished jobs are remembered
  AuthOptions auth;  // job secrets: --require-secret, the embedded daemon's own job key
};

// What the server has served, for the status endpoint (rendezvous/status/). Plain values.
struct ServerStats {
  std::size_t connections = 0;  // open store/rendezvous connections
  std::int64_t keys = 0;        // store keys (values; queues apart)
  std::size_t queues = 0;
  std::uint64_t bytes = 0;  // bytes of keys and values held
  std::size_t parked_waits = 0;
  std::array<std::uint64_t, kOpCount> ops{};  // TCPStore requests served, by Op
  std::uint64_t native_requests = 0;          // native rendezvous requests served
};

class Server {
 public:
  // Binds and listens before returning, so the port is held from then on (no
  // bind-close-rebind race); accepting runs on `io` once it runs.
  // Errors: kAddressInUse with "address 0.0.0.0:29400 is already in use; pick another --port or
  // stop the other process" style messages; kInvalidArgument when the connection caps do not
  // fit the open-file limit (resolve_caps), which is read here.
  static Result<std::unique_ptr<Server>> start(boost::asio::io_context& io,
                                               const ServerOptions& options);
  virtual ~Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (the real one when 0 was asked for) and the bind address.
  virtual std::uint16_t port() const = 0;
  virtual std::string host() const = 0;

  // Stops accepting and closes every connection. Idempotent. Connections finish
  // closing asynchronously on the io_context.
  virtual void stop() = 0;

  // A new attempt of the workers begins: closes every connection that is not a native
  // rendezvous node's (the old attempt's store clients, and whatever they sent that was not
  // served yet) and empties the store, so no key of an earlier attempt is seen. PyTorch >= 2.0
  // workers expect a fresh store per attempt (1.13 prefixed each attempt's keys instead). The
  // caller has reaped every worker of the old attempt: a straggler would write into the new one.
  virtual void reset_store() = 0;

  // Calls `done` on the io_context once job `run_id` has finished and every connection bound
  // to it closed (NativeHub::when_drained); never after stop().
  virtual void when_job_drained(std::string run_id, std::function<void()> done) = 0;

  // What every node of job `run_id` was told when it ended (exit code, reason, root cause);
  // nullopt while it runs or when unknown. For a process embedding the daemon that reports
  // the job's outcome itself (the launching ddprun of an ssh/pbsdsh fan-out).
  virtual std::optional<rendezvous::membership::JobFinished> job_outcome(
      const std::string& run_id) const = 0;

  // Observers for the status endpoint: O(1) counters, and the membership state of every job.
  // The reference is valid as long as the Server; read it on the io_context thread only.
  virtual ServerStats stats() const = 0;
  virtual const rendezvous::membership::Registry& registry() const = 0;

 protected:
  Server() = default;
};

}  // namespace ddp::rendezvous
