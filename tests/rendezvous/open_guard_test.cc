// Authenticated opens without the challenge round trip (AUTH_OPEN), the pure parts: the
// OpenGuard's window, start rule, seen nonces and memory cap, the wire codec, and the Gate's
// decisions on an opened connection (a known key only; the first frame must be the JOIN; a
// nonce is used once; a forged or refused frame uses up nothing).
#include "rendezvous/auth/open_guard.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "rendezvous/auth/gate.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"
#include "tests/rendezvous/gate_signer.h"

namespace ddp::rendezvous::auth {
namespace {

constexpr std::int64_t kStart = 1'000'000;
constexpr std::int64_t kWindow = 10'000;
constexpr std::int64_t kLater = kStart + 5 * kWindow;  // well past the start rule

Nonce nonce(std::uint8_t v) {
  Nonce n{};
  n.fill(v);
  return n;
}

TEST_CASE("open guard: a stamp within the window is accepted, once", "[auth][open]") {
  OpenGuard guard(kStart, {kWindow});
  CHECK(guard.judge(nonce(1), kLater, kLater, false) == OpenVerdict::kAccept);
  CHECK(guard.judge(nonce(1), kLater - kWindow, kLater, false) == OpenVerdict::kAccept);
  CHECK(guard.judge(nonce(1), kLater + kWindow, kLater, false) == OpenVerdict::kAccept);
  CHECK(guard.judge(nonce(1), kLater - kWindow - 1, kLater, false) == OpenVerdict::kOutsideWindow);
  CHECK(guard.judge(nonce(1), kLater + kWindow + 1, kLater, false) == OpenVerdict::kOutsideWindow);
  // Any stamp on the wire: no overflow.
  CHECK(guard.judge(nonce(1), std::numeric_limits<std::int64_t>::min(), kLater, false) ==
        OpenVerdict::kOutsideWindow);
  CHECK(guard.judge(nonce(1), std::numeric_limits<std::int64_t>::max(), kLater, false) ==
        OpenVerdict::kOutsideWindow);

  CHECK(guard.remember(nonce(1), kLater, kLater));
  CHECK(guard.judge(nonce(1), kLater, kLater, false) == OpenVerdict::kSeen);
  CHECK_FALSE(guard.remember(nonce(1), kLater, kLater));
  CHECK(guard.judge(nonce(2), kLater, kLater, false) == OpenVerdict::kAccept);
  // Kept while a stamp it carried could pass the window (+ 2 x window), then forgotten.
  const std::int64_t edge = kLater + 2 * kWindow;
  CHECK(guard.remember(nonce(2), edge - 1, edge - 1));
  CHECK(guard.remembered() == 2);
  CHECK(guard.remember(nonce(3), edge, edge));
  CHECK(guard.remembered() == 2);  // nonce 1 expired
  CHECK(guard.judge(nonce(1), edge, edge, false) == OpenVerdict::kAccept);
  // A stamp from the future (an agent clock running ahead) is kept until it is past.
  const std::int64_t ahead = edge + 100 * kWindow;
  CHECK(guard.remember(nonce(4), ahead, edge));
  CHECK(guard.remember(nonce(5), ahead - kWindow, ahead - kWindow));  // expires what is due
  CHECK(guard.judge(nonce(4), ahead, ahead, false) == OpenVerdict::kSeen);
}

TEST_CASE("open guard: stamps from before the daemon's start + window are challenged",
          "[auth][open]") {
  OpenGuard guard(kStart, {kWindow});
  // A recording made for an earlier daemon with the same key, replayed within the window of
  // its stamp: this daemon never saw its nonce, the start rule refuses it.
  for (std::int64_t stamp : {kStart - 1, kStart, kStart + kWindow - 1}) {
    CAPTURE(stamp);
    CHECK(guard.judge(nonce(1), stamp, stamp, false) == OpenVerdict::kTooSoonAfterStart);
    // A key drawn for this daemon (a fan-out's fresh secret) cannot predate it.
    CHECK(guard.judge(nonce(1), stamp, stamp, true) == OpenVerdict::kAccept);
  }
  CHECK(guard.judge(nonce(1), kStart + kWindow, kStart + kWindow, false) == OpenVerdict::kAccept);
}

TEST_CASE("open guard: window 0 challenges every open, a full memory too", "[auth][open]") {
  OpenGuard off(kStart, {0});
  CHECK(off.judge(nonce(1), kLater, kLater, true) == OpenVerdict::kOutsideWindow);
  OpenGuard small(kStart, {kWindow, 2});
  CHECK(small.remember(nonce(1), kLater, kLater));
  CHECK(small.remember(nonce(2), kLater, kLater));
  CHECK(small.judge(nonce(3), kLater, kLater, false) == OpenVerdict::kMemoryFull);
  CHECK(small.remember(nonce(3), kLater, kLater));  // a full memory still keeps what it is given
  CHECK(small.judge(nonce(3), kLater, kLater, false) == OpenVerdict::kSeen);
}

TEST_CASE("AUTH_OPEN encodes, decodes, and every cut is incomplete", "[auth][open]") {
  const AuthLimits limits{64, 4096};
  const AuthOpen open{"job-a", nonce(9), -42};
  const std::string bytes = encode_auth_open(open);
  CHECK(static_cast<std::uint8_t>(bytes[0]) == kAuthOpenType);
  for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
    auto p = parse_auth_open(std::string_view(bytes).substr(0, cut), limits);
    CHECK(p.state == ParseState::kIncomplete);
    CHECK(p.needed > cut);
  }
  auto p = parse_auth_open(bytes + "rest", limits);
  REQUIRE(p.state == ParseState::kComplete);
  CHECK(p.value == open);
  CHECK(p.consumed == bytes.size());
  CHECK(parse_auth_open(encode_auth_open({std::string(65, 'x'), nonce(1), 0}), limits).state ==
        ParseState::kError);
  CHECK(parse_auth_open(encode_auth_open({"", nonce(1), 0}), limits).state == ParseState::kError);
  // The open challenge is bound to the nonce and the stamp.
  CHECK(open_challenge(nonce(1), 5) == open_challenge(nonce(1), 5));
  CHECK(open_challenge(nonce(1), 5) != open_challenge(nonce(2), 5));
  CHECK(open_challenge(nonce(1), 5) != open_challenge(nonce(1), 6));
}

// ---- the gate on opened connections --------------------------------------------------------
const char* const kSecret = "the-right-secret";
using test::Signer;

membership::Request join(const std::string& run_id) {
  membership::JoinRequest j;
  j.run_id = run_id;
  return membership::Request{j};
}

ConnectionAuth conn_for(const std::string& run_id) {
  ConnectionAuth c;
  c.run_id = run_id;
  return c;
}

TEST_CASE("gate: an open for a known key goes on without a challenge, its nonce once",
          "[auth][open]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false, kStart, {kWindow});
  const Key key = job_key(kSecret, "A");
  gate.pin("A", key);

  auto first = conn_for("A");
  REQUIRE(gate.open(first, nonce(1), kLater, kLater) == OpenVerdict::kAccept);
  CHECK(first.challenge == open_challenge(nonce(1), kLater));
  // The same open replayed before the original's JOIN was checked: both pass the open, only
  // one JOIN can use the nonce.
  auto racing = conn_for("A");
  REQUIRE(gate.open(racing, nonce(1), kLater, kLater) == OpenVerdict::kAccept);
  CHECK(gate.verify(first, Signer{key, first.run_id}.sign(first, 0, join("A")), true, *daemon,
                    kLater));
  auto raced = gate.verify(racing, Signer{key, racing.run_id}.sign(racing, 0, join("A")), true,
                           *daemon, kLater);
  CHECK(raced.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(raced.message(), Catch::Contains("used before"));
  // Replayed later: the open itself is challenged.
  auto later = conn_for("A");
  CHECK(gate.open(later, nonce(1), kLater, kLater + 1) == OpenVerdict::kSeen);
  REQUIRE(later.opened);
  CHECK_FALSE(later.opened->without_challenge);
  // Frames after the JOIN use the open's challenge and the counter as usual.
  CHECK(gate.verify(
      first, Signer{key, first.run_id}.sign(first, 1, membership::Request{membership::Heartbeat{}}),
      true, *daemon, kLater));
}

TEST_CASE("gate: an open is challenged for an unknown key, a bad first frame uses nothing",
          "[auth][open]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false, kStart, {kWindow});
  const Key key = job_key(kSecret, "A");
  auto unknown = conn_for("A");
  CHECK(gate.open(unknown, nonce(1), kLater, kLater) == OpenVerdict::kUnknownKey);
  REQUIRE(unknown.opened);
  CHECK_FALSE(unknown.opened->without_challenge);

  gate.pin("A", key);
  // A wrong secret: refused, the nonce stays unused.
  auto wrong = conn_for("A");
  REQUIRE(gate.open(wrong, nonce(2), kLater, kLater) == OpenVerdict::kAccept);
  auto refused = gate.verify(
      wrong, Signer{job_key("a-wrong-secret!!", "A"), wrong.run_id}.sign(wrong, 0, join("A")), true,
      *daemon, kLater);
  CHECK(refused.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(refused.message(), Catch::Contains("does not match"));
  // The first frame of an opened connection must be its JOIN.
  auto not_join = conn_for("A");
  REQUIRE(gate.open(not_join, nonce(2), kLater, kLater) == OpenVerdict::kAccept);
  auto s = gate.verify(
      not_join,
      Signer{key, not_join.run_id}.sign(not_join, 0, membership::Request{membership::Heartbeat{}}),
      true, *daemon, kLater);
  CHECK(s.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(s.message(), Catch::Contains("must be its JOIN"));
  auto again = conn_for("A");
  CHECK(gate.open(again, nonce(2), kLater, kLater) == OpenVerdict::kAccept);
  // An open for job A cannot carry a JOIN for job B.
  gate.pin("B", job_key(kSecret, "B"));
  auto cross = conn_for("A");
  REQUIRE(gate.open(cross, nonce(3), kLater, kLater) == OpenVerdict::kAccept);
  CHECK(
      gate.verify(cross, Signer{key, cross.run_id}.sign(cross, 0, join("B")), true, *daemon, kLater)
          .code() == ErrorCode::kUnauthenticated);
}

TEST_CASE("gate: a challenged open's nonce is used up once its agent proves the key",
          "[auth][open]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false, kStart, {kWindow});
  const Key key = job_key(kSecret, "J");

  // Trust on first use: the first agent's open is challenged (no key yet), its optimistic JOIN
  // dropped; its challenged JOIN registers the key and uses up the open's nonce, so a
  // recording of that open replayed a moment later is challenged, not let through.
  auto first = conn_for("J");
  REQUIRE(gate.open(first, nonce(1), kLater, kLater) == OpenVerdict::kUnknownKey);
  ConnectionAuth as_opened = first;
  as_opened.challenge = open_challenge(nonce(1), kLater);
  gate.dropped(first, Signer{key, "J"}.sign(as_opened, 0, join("J")), kLater);
  first.challenge = Bytes32{42};
  auto wrap = wrap_job_key(key, daemon->public_key, first.challenge);
  REQUIRE(wrap);
  REQUIRE(gate.verify(first, Signer{key, "J"}.sign(first, 0, join("J"), *wrap), false, *daemon,
                      kLater));
  gate.settle("J", true);
  REQUIRE(gate.keyed("J"));
  auto replay = conn_for("J");
  CHECK(gate.open(replay, nonce(1), kLater, kLater + 1) == OpenVerdict::kSeen);

  // A known key, an open stamped a while ahead (the agent's clock runs fast): challenged now,
  // and its dropped frame verifies, so the recording is no good when its stamp comes due.
  const std::int64_t ahead = kLater + 3 * kWindow;
  auto fast = conn_for("J");
  REQUIRE(gate.open(fast, nonce(2), ahead, kLater) == OpenVerdict::kOutsideWindow);
  as_opened = fast;
  as_opened.challenge = open_challenge(nonce(2), ahead);
  gate.dropped(fast, Signer{key, "J"}.sign(as_opened, 0, join("J")), kLater);
  auto due = conn_for("J");
  CHECK(gate.open(due, nonce(2), ahead, ahead) == OpenVerdict::kSeen);

  // A dropped frame that does not verify (not the key's) uses up nothing.
  auto forged = conn_for("J");
  REQUIRE(gate.open(forged, nonce(3), ahead, kLater) == OpenVerdict::kOutsideWindow);
  as_opened = forged;
  as_opened.challenge = open_challenge(nonce(3), ahead);
  gate.dropped(forged, Signer{job_key("not-the-secret!!", "J"), "J"}.sign(as_opened, 0, join("J")),
               kLater);
  auto later = conn_for("J");
  CHECK(gate.open(later, nonce(3), ahead, ahead) == OpenVerdict::kAccept);
}

}  // namespace
}  // namespace ddp::rendezvous::auth
