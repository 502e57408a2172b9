// The agent's key wrap with its per-process X25519 pair (rendezvous/auth/key_wrap.h): wraps
// made from the cached shared secret unwrap on the daemon's side, differ per challenge, are
// keyed by the daemon's public key, and a malformed daemon key is refused and never cached.
#include "rendezvous/auth/key_wrap.h"

#include <catch2/catch.hpp>
#include <optional>
#include <thread>
#include <vector>

namespace ddp::rendezvous::auth {
namespace {

Bytes32 filled(std::uint8_t v) {
  Bytes32 b{};
  b.fill(v);
  return b;
}

const Key kKey = job_key("sixteen-byte-secret", "job");

TEST_CASE("a KeyWrapper's wraps unwrap on the daemon side, first and cached", "[auth][wrap]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  auto wrapper = KeyWrapper::create();
  REQUIRE(wrapper);
  KeyWrapper& w = **wrapper;
  for (std::uint8_t c = 1; c <= 3; ++c) {  // the first derives, the others use the cache
    auto wrap = w.wrap(kKey, daemon->public_key, filled(c));
    REQUIRE(wrap);
    CHECK(wrap->agent_public == w.public_key());
    CHECK(wrap->wrapped != kKey);
    auto back = unwrap_job_key(*wrap, *daemon, filled(c));
    REQUIRE(back);
    CHECK(*back == kKey);
  }
  CHECK(w.daemons_known() == 1);
}

TEST_CASE("wraps for different challenges differ, one for the wrong challenge fails",
          "[auth][wrap]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  auto wrapper = KeyWrapper::create();
  REQUIRE(wrapper);
  auto a = (*wrapper)->wrap(kKey, daemon->public_key, filled(1));
  auto b = (*wrapper)->wrap(kKey, daemon->public_key, filled(2));
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->agent_public == b->agent_public);  // one pair per process
  CHECK(a->wrapped != b->wrapped);            // the pad is per challenge
  auto crossed = unwrap_job_key(*a, *daemon, filled(2));
  CHECK((!crossed || *crossed != kKey));
}

TEST_CASE("the shared-secret cache is keyed by the daemon's public key", "[auth][wrap]") {
  auto d1 = generate_key_pair();
  auto d2 = generate_key_pair();
  REQUIRE(d1);
  REQUIRE(d2);
  auto wrapper = KeyWrapper::create();
  REQUIRE(wrapper);
  KeyWrapper& w = **wrapper;
  const Challenge c = filled(7);
  auto to1 = w.wrap(kKey, d1->public_key, c);
  auto to2 = w.wrap(kKey, d2->public_key, c);
  REQUIRE(to1);
  REQUIRE(to2);
  CHECK(w.daemons_known() == 2);
  CHECK(to1->wrapped != to2->wrapped);
  CHECK(*unwrap_job_key(*to1, *d1, c) == kKey);
  CHECK(*unwrap_job_key(*to2, *d2, c) == kKey);
  auto wrong = unwrap_job_key(*to1, *d2, c);
  CHECK((!wrong || *wrong != kKey));
  // A second wrap for d1 after d2 still uses d1's secret.
  auto again = w.wrap(kKey, d1->public_key, filled(8));
  REQUIRE(again);
  CHECK(*unwrap_job_key(*again, *d1, filled(8)) == kKey);
  CHECK(w.daemons_known() == 2);
}

TEST_CASE("a malformed daemon key is refused and not cached, the cache is bounded",
          "[auth][wrap]") {
  auto wrapper = KeyWrapper::create();
  REQUIRE(wrapper);
  KeyWrapper& w = **wrapper;
  auto zero = w.wrap(kKey, filled(0), filled(1));  // a low-order point
  REQUIRE_FALSE(zero);
  CHECK(zero.status().code() == ErrorCode::kUnauthenticated);
  CHECK(w.daemons_known() == 0);
  std::optional<KeyPair> last;
  for (std::size_t i = 0; i <= KeyWrapper::kMaxDaemons; ++i) {
    auto d = generate_key_pair();
    REQUIRE(d);
    REQUIRE(w.wrap(kKey, d->public_key, filled(1)));
    last = *d;
  }
  CHECK(w.daemons_known() <= KeyWrapper::kMaxDaemons);
  auto wrap = w.wrap(kKey, last->public_key, filled(2));
  REQUIRE(wrap);
  CHECK(*unwrap_job_key(*wrap, *last, filled(2)) == kKey);
}

TEST_CASE("wrap_job_key keeps one pair per process and is safe from several threads",
          "[auth][wrap]") {
  auto daemon = generate_key_pair();
  REQUIRE(daemon);
  constexpr int kThreads = 4;
  std::vector<std::optional<KeyWrap>> wraps(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto w = wrap_job_key(kKey, daemon->public_key, filled(static_cast<std::uint8_t>(t + 1)));
      if (w) wraps[t] = *w;
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(wraps[t]);
    CHECK(wraps[t]->agent_public == wraps[0]->agent_public);
    auto back = unwrap_job_key(*wraps[t], *daemon, filled(static_cast<std::uint8_t>(t + 1)));
    REQUIRE(back);
    CHECK(*back == kKey);
  }
}

}  // namespace
}  // namespace ddp::rendezvous::auth
