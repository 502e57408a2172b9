// Connecting an agent to the rendezvous daemon, with retries. A static-backend node of rank
// above 0 may start before node rank 0's agent listens (torchrun's static rendezvous waits
// the same way), so a refused, unreachable or unresolvable endpoint is tried again, with a
// growing pause (there is no event to wait for on a machine that is not listening yet),
// until `retry_for` has passed. retry_for zero = one attempt (the c10d backend).
//
// Threading: call on the thread that runs `io` (or before io.run()); `done` runs on that
// thread, never inside the call. Each attempt uses a fresh RdzvClient; the one that connects
// is handed over with `handlers` installed.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "rendezvous/rdzv_client.h"

namespace ddp::agent {

struct DaemonEndpoint {
  std::string host;
  std::uint16_t port = 0;
  std::chrono::milliseconds attempt_timeout{std::chrono::seconds(60)};  // one connect
  std::chrono::milliseconds retry_for{0};                               // total budget
};

// `done` gets the connected client, or the last attempt's error (kTimeout when the budget
// ran out while retrying: "cannot reach the rendezvous at HOST:PORT for 20000ms (last
// attempt: ...)"). Cancel a pending call by stopping `io`.
void connect_daemon(boost::asio::io_context& io, rendezvous::RdzvClientHandlers handlers,
                    DaemonEndpoint endpoint,
                    std::function<void(Result<std::shared_ptr<rendezvous::RdzvClient>>)> done);

}  // namespace ddp::agent
