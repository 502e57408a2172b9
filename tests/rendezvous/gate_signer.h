// Test helper for the Gate: builds the FrameCheck an agent's signed frame gives the daemon.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rendezvous/auth/gate.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"

namespace ddp::rendezvous::auth::test {

struct Signer {
  Key key;
  std::string run_id;
  std::string covered{};  // the last sign()'s covered bytes, which its FrameCheck views
  // Builds a FrameCheck for `request` as an agent would sign it on `conn`.
  FrameCheck sign(const ConnectionAuth& conn, std::uint64_t counter,
                  const membership::Request& request, std::optional<KeyWrap> wrap = {}) {
    covered = auth_covered(wrap, membership::encode_request(request));
    FrameCheck f;
    f.counter = counter;
    f.wrap = wrap;
    f.covered = covered;
    f.mac = frame_mac(key, conn.challenge, counter, run_id, covered);
    if (const auto* j = std::get_if<membership::JoinRequest>(&request)) {
      f.is_join = true;
      f.join_run_id = j->run_id;
    }
    return f;
  }
};

}  // namespace ddp::rendezvous::auth::test
