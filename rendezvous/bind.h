// Opening a listening socket the way every server of the daemon does (the store and its status
// port): HOST empty = every interface (IPv6 dual-stack, else IPv4), else HOST as an address or
// a resolvable name; SO_REUSEADDR; a deep backlog; non-blocking (accept loops drain bursts
// synchronously).
// Threading: the thread that runs `acceptor`'s io_context (or before it runs).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::rendezvous {

// Errors: kAddressInUse ("address 0.0.0.0:29400 is already in use; pick another <flag> or stop
// the other process"), kInvalidArgument for an unresolvable HOST, kIo otherwise.
// `port_flag` names the option in messages ("--port", "--status-port").
Status open_listener(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host,
                     std::uint16_t port, const std::string& port_flag);

// "1.2.3.4:5" or "[::1]:5".
std::string format_endpoint(const boost::asio::ip::address& address, std::uint16_t port);

}  // namespace ddp::rendezvous
