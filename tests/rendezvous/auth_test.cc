// Job secrets, the pure parts: HMAC-SHA256 known answers (RFC 4231), job keys bound to the run
// id, frame MACs bound to challenge / counter / run id / bytes, the replay counter, the X25519
// key wrap, the AUTH wire codec (limits before allocation, every cut point incomplete) and the
// Gate's decisions.
#include "rendezvous/auth/auth.h"

#include <optional>
#include <string>

#include "rendezvous/auth/gate.h"
#include "rendezvous/auth/key_wrap.h"
#include "rendezvous/framer.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"
#include "tests/catch.h"
#include "tests/rendezvous/wire_bytes.h"

namespace ddp::rendezvous::auth {
namespace {

std::string hex(const Bytes32& b) {
  return to_hex(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

Bytes32 filled(std::uint8_t v) {
  Bytes32 b{};
  b.fill(v);
  return b;
}

TEST_CASE("HMAC-SHA256 gives the RFC 4231 known answers", "[auth]") {
  CHECK(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hex(hmac_sha256(std::string(20, '\xaa'), std::string(50, '\xdd'))) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  CHECK(hex(hmac_sha256(key4, std::string(50, '\xcd'))) ==
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  CHECK(hex(hmac_sha256(std::string(131, '\xaa'),
                        "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(hex(hmac_sha256(std::string(131, '\xaa'),
                        "This is a test using a larger than block-size key and a larger than "
                        "block-size data. The key needs to be hashed before being used by the "
                        "HMAC algorithm.")) ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("a MacKey gives hmac_sha256's tags, call after call, and survives a move", "[auth]") {
  const std::string key(20, '\x0b');
  MacKey ready(key);
  for (int i = 0; i < 3; ++i) {
    CHECK(hex(ready.mac({"Hi ", "", "There"})) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(ready.mac({"other", " data"}) == hmac_sha256(key, "other data"));
  }
  MacKey moved(std::move(ready));
  CHECK(moved.mac({"x"}) == hmac_sha256(key, "x"));
  const Key job = job_key("sixteen-byte-secret", "job-a");
  MacKey job_ready(job);
  CHECK(frame_mac(job_ready, filled(7), 3, "job-a", "bytes") ==
        frame_mac(job, filled(7), 3, "job-a", "bytes"));
}

TEST_CASE("job keys are bound to the run id and frame MACs to every input", "[auth]") {
  const Key a = job_key("sixteen-byte-secret", "job-a");
  CHECK(a == job_key("sixteen-byte-secret", "job-a"));
  CHECK(a != job_key("sixteen-byte-secret", "job-b"));
  CHECK(a != job_key("another-secret-16", "job-a"));
  const Challenge c = filled(7);
  const Mac m = frame_mac(a, c, 3, "job-a", "bytes");
  CHECK(same_mac(m, frame_mac(a, c, 3, "job-a", "bytes")));
  CHECK_FALSE(same_mac(m, frame_mac(a, filled(8), 3, "job-a", "bytes")));  // other connection
  CHECK_FALSE(same_mac(m, frame_mac(a, c, 4, "job-a", "bytes")));          // other counter
  CHECK_FALSE(same_mac(m, frame_mac(a, c, 3, "job-b", "bytes")));          // other job
  CHECK_FALSE(same_mac(m, frame_mac(a, c, 3, "job-a", "bytez")));          // other request
}

TEST_CASE("the frame counter accepts 0, 1, 2 ... once each, in order", "[auth]") {
  FrameCounter counter;
  CHECK(counter.accept(0));
  CHECK_FALSE(counter.accept(0));  // replay
  CHECK_FALSE(counter.accept(2));  // gap
  CHECK(counter.accept(1));
  CHECK(counter.next() == 2);
}

TEST_CASE("a wrapped job key unwraps only with the daemon's key and the same challenge", "[auth]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  auto other = generate_key_pair();
  REQUIRE(other);
  const Key key = job_key("sixteen-byte-secret", "job");
  const Challenge c = filled(1);
  auto wrap = wrap_job_key(key, daemon->public_key, c);
  REQUIRE(wrap);
  CHECK(wrap->wrapped != key);  // never in clear
  auto back = unwrap_job_key(*wrap, *daemon, c);
  REQUIRE(back);
  CHECK(*back == key);
  auto again = wrap_job_key(key, daemon->public_key, c);  // a fresh pair per wrap
  REQUIRE(again);
  CHECK(again->agent_public != wrap->agent_public);
  CHECK(*unwrap_job_key(*again, *daemon, c) == key);
  auto wrong_daemon = unwrap_job_key(*wrap, *other, c);
  CHECK((!wrong_daemon || *wrong_daemon != key));
  auto wrong_challenge = unwrap_job_key(*wrap, *daemon, filled(2));
  CHECK((!wrong_challenge || *wrong_challenge != key));
  // A low-order public key (all zeros) is refused, not turned into a predictable pad.
  KeyWrap zero{filled(0), filled(0)};
  CHECK_FALSE(unwrap_job_key(zero, *daemon, c));
}

TEST_CASE("fresh secrets are 64 hex digits and differ", "[auth]") {
  auto a = fresh_secret();
  auto b = fresh_secret();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->size() == 64);
  CHECK(*a != *b);
}

// ---- wire codec -----------------------------------------------------------------------
TEST_CASE("AUTH messages round-trip and every cut point is incomplete", "[auth][wire]") {
  const AuthLimits limits;
  const std::string hello = encode_auth_hello("job-a");
  for (std::size_t cut = 0; cut < hello.size(); ++cut) {
    auto p = parse_auth_hello(std::string_view(hello).substr(0, cut), limits);
    CHECK(p.state == codec::DecodeState::kIncomplete);
    CHECK(p.needed > cut);
  }
  auto h = parse_auth_hello(hello, limits);
  REQUIRE(h.state == codec::DecodeState::kComplete);
  CHECK(h.value == "job-a");
  CHECK(h.consumed == hello.size());

  const std::string request =
      membership::encode_request(membership::Request{membership::Leave{"bye"}});
  for (bool with_wrap : {false, true}) {
    std::optional<KeyWrap> wrap;
    if (with_wrap) wrap = KeyWrap{filled(3), filled(4)};
    const std::string covered = auth_covered(wrap, request);
    const std::string frame = encode_auth_frame(9, filled(5), covered);
    for (std::size_t cut = 0; cut < frame.size(); ++cut) {
      auto p = parse_auth_frame(std::string_view(frame).substr(0, cut), limits);
      CHECK(p.state == codec::DecodeState::kIncomplete);
      CHECK(p.needed > cut);
    }
    auto f = parse_auth_frame(frame + "tail", limits);
    REQUIRE(f.state == codec::DecodeState::kComplete);
    CHECK(f.consumed == frame.size());
    CHECK(f.value.counter == 9);
    CHECK(f.value.mac == filled(5));
    CHECK(f.value.wrap == wrap);
    CHECK(f.value.covered == covered);
    CHECK(f.value.request() == request);
  }

  const ChallengeMessage challenge{filled(6), true, filled(7)};
  const std::string c = encode_challenge(challenge);
  for (std::size_t cut = 0; cut < c.size(); ++cut) {
    CHECK(parse_challenge(std::string_view(c).substr(0, cut)).state ==
          codec::DecodeState::kIncomplete);
  }
  auto pc = parse_challenge(c);
  REQUIRE(pc.state == codec::DecodeState::kComplete);
  CHECK(pc.value == challenge);

  // A newer peer's fields after those this build knows are skipped; an AUTH_FRAME's MAC still
  // covers exactly the wrap flag to the request's end.
  const std::string newer_challenge = test::framed(kChallengeType, c.substr(5) + "new field");
  auto pn = parse_challenge(newer_challenge + "next");
  REQUIRE(pn.state == codec::DecodeState::kComplete);
  CHECK(pn.value == challenge);
  CHECK(pn.consumed == newer_challenge.size());
  const std::string covered = auth_covered(std::nullopt, request);
  const std::string newer_frame =
      test::framed(kAuthFrameType, encode_auth_frame(3, filled(5), covered).substr(5) + "new");
  auto nf = parse_auth_frame(newer_frame, limits);
  REQUIRE(nf.state == codec::DecodeState::kComplete);
  CHECK(nf.consumed == newer_frame.size());
  CHECK(nf.value.covered == covered);
  CHECK(nf.value.request() == request);
}

TEST_CASE("AUTH lengths are checked against the limits before anything is allocated",
          "[auth][wire]") {
  AuthLimits limits;
  limits.max_run_id_bytes = 8;
  limits.max_request_bytes = 64;
  // An AUTH_HELLO whose run id declares 1 TB and holds nothing.
  const std::string hello = test::framed(kAuthHelloType, test::u64(std::uint64_t{1} << 40));
  auto h = parse_auth_hello(hello, limits);
  CHECK(h.state == codec::DecodeState::kError);
  CHECK_THAT(h.error, Catch::Contains("run id of 1099511627776 bytes exceeds the limit of 8"));
  CHECK(parse_auth_hello(encode_auth_hello(""), limits).state == codec::DecodeState::kError);
  // A message declaring more than max_request_bytes: refused from its length alone.
  auto big = parse_auth_hello(test::byte(kAuthHelloType) + test::u32(65), limits);
  CHECK(big.state == codec::DecodeState::kError);
  CHECK_THAT(big.error, Catch::Contains("65 bytes exceeds the limit of 64"));

  // An AUTH_FRAME whose request declares 65 bytes (over the limit of 64) and holds nothing.
  auto f = parse_auth_frame(encode_auth_frame(0, filled(0), test::byte(0) + test::u64(65)), limits);
  CHECK(f.state == codec::DecodeState::kError);
  CHECK_THAT(f.error, Catch::Contains("request of 65 bytes"));
  CHECK(parse_auth_frame(encode_auth_frame(0, filled(0), test::byte(2)), limits).state ==
        codec::DecodeState::kError);  // the wrap flag is 0 or 1
}

TEST_CASE("the Framer refuses an AUTH_FRAME that does not hold exactly one native request",
          "[auth][wire]") {
  Framer framer{Limits{}};
  REQUIRE(framer.next(membership::encode_hello(membership::this_version())).kind ==
          FrameKind::kHello);
  const std::string leave =
      membership::encode_request(membership::Request{membership::Leave{"bye"}});
  auto ok = framer.next(encode_auth_frame(0, filled(0), auth_covered(std::nullopt, leave)));
  REQUIRE(ok.kind == FrameKind::kAuthFrame);
  CHECK(std::holds_alternative<membership::Leave>(ok.native));
  // Nested AUTH or HELLO, trailing junk, a TCPStore query inside: errors.
  for (const std::string& inner :
       {encode_auth_hello("job"), membership::encode_hello(membership::this_version()), leave + "x",
        std::string("\x01")}) {
    auto f = framer.next(encode_auth_frame(0, filled(0), auth_covered(std::nullopt, inner)));
    CHECK(f.kind == FrameKind::kError);
    CHECK_THAT(f.error, Catch::Contains("exactly one native request"));
  }
}

// ---- gate -----------------------------------------------------------------------------
// Builds the FrameCheck an agent's signed frame gives the daemon.
struct Signer {
  Key key;
  std::string run_id;
  std::string covered{};  // the last sign()'s covered bytes, which its FrameCheck views
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

membership::Request join_of(const std::string& run_id) {
  membership::JoinRequest j;
  j.run_id = run_id;
  return membership::Request{j};
}

ConnectionAuth conn_for(const std::string& run_id, std::uint8_t nonce) {
  ConnectionAuth c;
  c.run_id = run_id;
  c.challenge = filled(nonce);
  return c;
}

TEST_CASE("gate: a pinned job accepts its key, in counter order, and nothing else", "[auth]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false);
  const Key key = job_key("the-right-secret", "A");
  gate.pin("A", key);
  CHECK(gate.keyed("A"));
  CHECK(gate.check_plain_join("A").code() == ErrorCode::kUnauthenticated);
  CHECK(gate.check_plain_join("B"));  // keyless jobs work as before

  auto conn = conn_for("A", 1);
  Signer right{key, "A"};
  CHECK(gate.verify(conn, right.sign(conn, 0, join_of("A")), false, *daemon));
  auto hb = right.sign(conn, 1, membership::Request{membership::Heartbeat{}});
  CHECK(gate.verify(conn, hb, true, *daemon));
  // The same frame again (a replay on this connection) and a skipped counter: refused.
  auto again = gate.verify(conn, hb, true, *daemon);
  CHECK(again.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(again.message(), Catch::Contains("replayed"));
  // The same frame on another connection (another challenge): the MAC fails.
  auto other = conn_for("A", 2);
  other.counter.accept(0);
  other.counter.accept(1);
  auto moved = gate.verify(other, hb, true, *daemon);
  CHECK(moved.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(moved.message(), Catch::Contains("does not match"));

  Signer wrong{job_key("a-wrong-secret!!", "A"), "A"};
  auto bad = conn_for("A", 3);
  auto refused = gate.verify(bad, wrong.sign(bad, 0, join_of("A")), true, *daemon);
  CHECK(refused.code() == ErrorCode::kUnauthenticated);
  CHECK(bad.counter.next() == 0);  // a forged frame does not advance the counter
}

TEST_CASE("gate: a connection opened for job A cannot join job B", "[auth]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false);
  gate.pin("A", job_key("the-right-secret", "A"));
  gate.pin("B", job_key("the-right-secret", "B"));
  auto conn = conn_for("A", 1);
  Signer a{job_key("the-right-secret", "A"), "A"};
  auto s = gate.verify(conn, a.sign(conn, 0, join_of("B")), false, *daemon);
  CHECK(s.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(s.message(), Catch::Contains("opened for job 'A'"));
}

TEST_CASE("gate: trust on first use registers the first JOIN's key once its job exists", "[auth]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  Gate gate(false);
  const Key key = job_key("the-right-secret", "J");
  auto conn = conn_for("J", 1);
  auto wrap = wrap_job_key(key, daemon->public_key, conn.challenge);
  REQUIRE(wrap);
  Signer first{key, "J"};
  // Without a wrap an unknown job cannot be joined with a frame.
  auto bare = conn_for("J", 9);
  CHECK(gate.verify(bare, first.sign(bare, 0, join_of("J")), false, *daemon).code() ==
        ErrorCode::kUnauthenticated);
  REQUIRE(gate.verify(conn, first.sign(conn, 0, join_of("J"), *wrap), false, *daemon));
  gate.settle("J", true);
  CHECK(gate.keyed("J"));
  // A later agent with another secret (and its own wrap) is refused: the key is the first one.
  auto late = conn_for("J", 2);
  const Key other = job_key("not-the-secret!!", "J");
  auto other_wrap = wrap_job_key(other, daemon->public_key, late.challenge);
  REQUIRE(other_wrap);
  Signer intruder{other, "J"};
  CHECK(
      gate.verify(late, intruder.sign(late, 0, join_of("J"), *other_wrap), true, *daemon).code() ==
      ErrorCode::kUnauthenticated);
  // A plain JOIN to the keyed job is refused; a keyed JOIN to a keyless running job too.
  CHECK_FALSE(gate.check_plain_join("J"));
  auto k = conn_for("K", 3);
  const Key kk = job_key("the-right-secret", "K");
  auto kwrap = wrap_job_key(kk, daemon->public_key, k.challenge);
  REQUIRE(kwrap);
  Signer ks{kk, "K"};
  CHECK(gate.verify(k, ks.sign(k, 0, join_of("K"), *kwrap), true, *daemon).code() ==
        ErrorCode::kUnauthenticated);
  // When the job is gone, an unpinned key is forgotten; a refused first JOIN registers nothing.
  gate.settle("J", false);
  CHECK_FALSE(gate.keyed("J"));
}

TEST_CASE("gate: require-secret refuses plain JOINs", "[auth]") {
  Gate gate(true);
  auto s = gate.check_plain_join("job");
  CHECK(s.code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(s.message(), Catch::Contains("--require-secret"));
}

}  // namespace
}  // namespace ddp::rendezvous::auth
