// libFuzzer target for the job-secret messages (rendezvous/protocol.h: AUTH_HELLO, AUTH_OPEN,
// AUTH_FRAME, CHALLENGE) and the daemon's Gate behind them. Arbitrary bytes are parsed as each
// message; an invariant that breaks traps:
//  - a complete message re-encodes to exactly the bytes it consumed;
//  - an incomplete parse asks for more bytes than it has;
//  - an AUTH_FRAME with arbitrary MAC, counter and key wrap (any X25519 point) is never accepted
//    by the Gate, for a pinned job or an unknown one, on a challenged connection or one opened
//    without a challenge, never registers a key and never uses up an open's nonce;
//  - an AUTH_OPEN for a job the Gate knows, stamped now, goes on without a challenge over
//    exactly open_challenge(nonce, stamp); for an unknown job it is challenged;
//  - nothing reads out of bounds or allocates past the limits (ASan/UBSan, -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/auth/gate.h"
#include "rendezvous/protocol.h"

namespace {

using namespace ddp::rendezvous;

void check(bool ok) {
  if (!ok) __builtin_trap();
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
  const std::uint8_t pick = data[0] % 4;
  std::string input(1, static_cast<char>(pick == 0   ? kAuthHelloType
                                         : pick == 1 ? kAuthFrameType
                                         : pick == 2 ? kChallengeType
                                                     : kAuthOpenType));
  input.append(raw.substr(1));

  if (pick == 0) {
    auto p = parse_auth_hello(input, limits);
    if (p.state == ParseState::kIncomplete) check(p.needed > input.size());
    if (p.state == ParseState::kComplete) {
      check(encode_auth_hello(p.value) == input.substr(0, p.consumed));
    }
  } else if (pick == 1) {
    auto p = parse_auth_frame(input, limits);
    if (p.state == ParseState::kIncomplete) check(p.needed > input.size());
    if (p.state == ParseState::kComplete) {
      const AuthFrame& f = p.value;
      check(encode_auth_frame(f.counter, f.mac, f.covered) == input.substr(0, p.consumed));
      check(auth_covered(f.wrap, f.request()) == f.covered);
      auth::Gate gate(false, 0);
      gate.pin("pinned", auth::job_key("a-secret-of-16-bytes", "pinned"), true);
      const auth::Nonce nonce{7};
      for (int k = 0; k < 3; ++k) {
        const char* run_id = k == 1 ? "unknown" : "pinned";
        auth::ConnectionAuth conn;
        conn.run_id = run_id;
        if (k == 2) check(gate.open(conn, nonce, 1000, 1000) == auth::OpenVerdict::kAccept);
        auth::FrameCheck frame;
        frame.counter = f.counter;
        frame.mac = f.mac;
        frame.wrap = f.wrap;
        frame.covered = f.covered;
        frame.is_join = true;
        frame.join_run_id = run_id;
        if (k == 2) gate.dropped(conn, frame, 1000);  // as the optimistic frame: no MAC
        check(!gate.verify(conn, frame, false, daemon_key(), 1000));
        check(conn.counter.next() == 0);
        gate.settle(run_id, true);
      }
      check(!gate.keyed("unknown"));
      auth::ConnectionAuth again;
      again.run_id = "pinned";
      check(gate.open(again, nonce, 1000, 1000) == auth::OpenVerdict::kAccept);
    }
  } else if (pick == 3) {
    auto p = parse_auth_open(input, limits);
    if (p.state == ParseState::kIncomplete) check(p.needed > input.size());
    if (p.state == ParseState::kComplete) {
      check(encode_auth_open(p.value) == input.substr(0, p.consumed));
      auth::Gate gate(false, 0);
      gate.pin("pinned", auth::job_key("a-secret-of-16-bytes", "pinned"), true);
      auth::ConnectionAuth conn;
      conn.run_id = p.value.run_id;
      const auto verdict = gate.open(conn, p.value.nonce, p.value.unix_ms, p.value.unix_ms);
      if (p.value.run_id == "pinned") {
        check(verdict == auth::OpenVerdict::kAccept);
        check(conn.challenge == auth::open_challenge(p.value.nonce, p.value.unix_ms));
      } else {
        check(verdict == auth::OpenVerdict::kUnknownKey);
        check(conn.opened && !conn.opened->without_challenge);
      }
    }
  } else {
    auto p = parse_challenge(input);
    if (p.state == ParseState::kIncomplete) check(p.needed > input.size());
    if (p.state == ParseState::kComplete) {
      check(encode_challenge(p.value) == input.substr(0, p.consumed));
    }
  }
  return 0;
}
