// The address this machine uses to reach `host`: what the remote agents should dial to reach
// the rendezvous this ddprun hosts. Asks the kernel's routing table by connect()ing a UDP
// socket (no packet is sent) and reading its local address (getsockname).
// Errors: kInvalidArgument naming the host when it does not resolve, kIo when no route.
#pragma once

#include <string>

#include "common/status.h"

namespace ddp::launcher::fanout {

Result<std::string> local_address_towards(const std::string& host);

}  // namespace ddp::launcher::fanout
