// Listening as the rendezvous host of a multi-node job (c10d is_host, static node rank 0, an
// etcd candidate on port 0).
//
// First ADDR:PORT is bound: succeeding proves ADDR is this machine's (torchrun's is_host
// inference). When ADDR is a host name rather than an IP literal, the listener is then moved to
// PORT on every interface, as PyTorch's TCPStore server listens: a name that resolves to a
// loopback alias on its own machine (Debian maps the hostname to 127.0.1.1 in /etc/hosts)
// must still be reachable from the other nodes, which resolve it to the real address. An IP
// literal is kept as given (the user picked that interface). When the every-interface bind
// fails (the port is held on another address), ADDR:PORT alone is served again.
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

// Where the workers' store listens when the workers are told MASTER_ADDR=`master_addr`: that
// address when it is an IP literal (the store is then reachable on the interface the workers use
// and no other), else "" (every interface): a host name may resolve differently here than on
// the other nodes (Debian maps the hostname to 127.0.1.1). docs/security.md.
std::string store_bind_host(const std::string& master_addr);

// `base`: every other server option (auth, connection limits); its host and port are ignored.
// Errors: those of binding ADDR:PORT (rendezvous::Server::start), e.g. "already in use", or ADDR
// not an address of this machine.
Result<std::unique_ptr<rendezvous::Server>> listen_as_host(boost::asio::io_context& io,
                                                           const std::string& addr,
                                                           std::uint16_t port,
                                                           rendezvous::ServerOptions base = {});

}  // namespace ddp::agent
