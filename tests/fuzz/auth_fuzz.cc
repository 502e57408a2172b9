// libFuzzer target for the job-secret messages (rendezvous/protocol.h: AUTH_HELLO, AUTH_FRAME,
// CHALLENGE) and the daemon's Gate behind them. Arbitrary bytes are parsed as each message; an
// invariant that breaks traps:
//  - a complete message is `u8 type | u32 n | n bytes` and ends there; its n bytes start with
//    exactly the fields it re-encodes to (what follows them is a newer peer's, skipped);
//  - an incomplete parse asks for more bytes than it has;
//  - an AUTH_FRAME with arbitrary MAC, counter and key wrap (any X25519 point) is never accepted
//    by the Gate, for a pinned job or an unknown one, and never registers a key;
//  - nothing reads out of bounds or allocates past the limits (ASan/UBSan, -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "rendezvous/auth/gate.h"
#include "rendezvous/protocol.h"

namespace {

using namespace ddp::rendezvous;
namespace codec = ddp::codec;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// The first invariant above, for `input` of which a parse consumed `consumed` bytes and whose
// message re-encodes to `again`.
void check_canonical(std::string_view input, std::size_t consumed, std::string_view again) {
  check(consumed <= input.size() && input.size() >= 5 && again.size() >= 5);
  std::uint32_t n = 0;
  std::memcpy(&n, input.data() + 1, sizeof n);
  check(consumed == 5 + std::size_t{n});
  check(consumed >= again.size());
  check(input[0] == again[0]);
  check(input.substr(5, again.size() - 5) == again.substr(5));
}

const auth::KeyPair& daemon_key() {
  static const auth::KeyPair pair = *auth::generate_key_pair();
  return pair;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  AuthLimits limits;
  limits.max_run_id_bytes = 64;
  limits.max_request_bytes = 4096;
  // The first byte picks the message; the rest is its body after the type byte.
  const std::uint8_t pick = data[0] % 3;
  std::string input(1, static_cast<char>(pick == 0   ? kAuthHelloType
                                         : pick == 1 ? kAuthFrameType
                                                     : kChallengeType));
  input.append(raw.substr(1));

  if (pick == 0) {
    auto p = parse_auth_hello(input, limits);
    if (p.state == codec::DecodeState::kIncomplete) check(p.needed > input.size());
    if (p.state == codec::DecodeState::kComplete) {
      check_canonical(input, p.consumed, encode_auth_hello(p.value));
    }
  } else if (pick == 1) {
    auto p = parse_auth_frame(input, limits);
    if (p.state == codec::DecodeState::kIncomplete) check(p.needed > input.size());
    if (p.state == codec::DecodeState::kComplete) {
      const AuthFrame& f = p.value;
      check_canonical(input, p.consumed, encode_auth_frame(f.counter, f.mac, f.covered));
      check(auth_covered(f.wrap, f.request()) == f.covered);
      auth::Gate gate(false);
      gate.pin("pinned", auth::job_key("a-secret-of-16-bytes", "pinned"));
      for (const char* run_id : {"pinned", "unknown"}) {
        auth::ConnectionAuth conn;
        conn.run_id = run_id;
        auth::FrameCheck frame;
        frame.counter = f.counter;
        frame.mac = f.mac;
        frame.wrap = f.wrap;
        frame.covered = f.covered;
        frame.is_join = true;
        frame.join_run_id = run_id;
        check(!gate.verify(conn, frame, false, daemon_key()));
        check(conn.counter.next() == 0);
        gate.settle(run_id, true);
      }
      check(!gate.keyed("unknown"));
    }
  } else {
    auto p = parse_challenge(input);
    if (p.state == codec::DecodeState::kIncomplete) check(p.needed > input.size());
    if (p.state == codec::DecodeState::kComplete) {
      check_canonical(input, p.consumed, encode_challenge(p.value));
    }
  }
  return 0;
}
