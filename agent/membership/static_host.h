// Node rank 0 of a static-backend job: the rendezvous daemon listening on --master-addr:
// --master-port, which is also the workers' TCPStore (their MASTER_ADDR/MASTER_PORT, as
// torchrun's static rendezvous gives them), held from here to the end of the job.
//
// It binds A:P itself. When A is not an address of this machine (a NAT or service address
// that reaches it) it listens on port P of every interface instead, and says so.
//
// Threading: call on the thread that runs `io` (or before io.run()).
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "rendezvous/server.h"

namespace ddp::agent {

struct StaticHost {
  std::unique_ptr<rendezvous::Server> server;
  std::string connect_host;  // where this agent's own rendezvous client reaches it
};

// `base`: every other server option (auth, connection limits); its host and port are ignored.
// Errors: kIo "port P on A is taken (...); ..." when something else listens there (the fix:
// stop it, or pass a free --master-port, the same on every node); kIo for other failures.
Result<StaticHost> start_static_host(boost::asio::io_context& io, const std::string& addr,
                                     std::uint16_t port,
                                     const rendezvous::ServerOptions& base = {});

}  // namespace ddp::agent
