// This build's Version (wire.h): its own file, the one the release number is compiled into.
#include "rendezvous/membership/wire.h"

namespace ddp::rendezvous::membership {

Version this_version() { return Version{kProtocol, kOldestProtocol, DDPRUN_VERSION}; }

}  // namespace ddp::rendezvous::membership
