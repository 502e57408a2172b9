// Opens that wait for their job's key (rendezvous/open_parking.h), end to end inside one
// process: an embedded standalone-style Server (no pinned key: trust on first use) and raw
// agents writing their opens on one io_context. While the job's first agent is challenged
// and registers the key, the others' opens are parked (nothing is sent to them); once its
// JOIN is handled they go on without a challenge. When the registrar closes, or stays silent
// past the deadline, the parked opens are challenged as before; nothing is lost either way.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/wall_clock.h"
#include "rendezvous/auth/auth.h"
#include "rendezvous/auth/key_wrap.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"
#include "rendezvous/server.h"
#include "tests/rendezvous/raw_agent.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
namespace m = membership;
using test::Raw;
using test::run_until;

const std::string kSecret = "0123456789abcdef-the-parking-secret";
const std::string kJob = "parked-job";
constexpr std::size_t kChallengeBytes = 66;

m::JoinRequest join_request(const std::string& node) { return test::join_request(kJob, 3, node); }

// A standalone daemon (no pinned key) past its start rule.
struct Daemon {
  boost::asio::io_context io;
  std::unique_ptr<Server> server;
  Daemon() {
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.auth.open_rules.window_ms = 200;
    const auto started = std::chrono::steady_clock::now();
    auto s = Server::start(io, options);
    REQUIRE(s);
    server = std::move(s).value();
    REQUIRE(run_until(io, [&] { return std::chrono::steady_clock::now() > started + 300ms; }));
  }
  ServerStats stats() const { return server->stats(); }
};

// Raw agent `node`: connects and writes its open and optimistic JOIN.
std::unique_ptr<Raw> opening(Daemon& d, const std::string& node) {
  auto raw = std::make_unique<Raw>(d.io);
  raw->connect(d.io, d.server->port());
  raw->send(test::open_bytes(kSecret, join_request(node), unix_ms_now()));
  return raw;
}

// The registrar's answer to its CHALLENGE: the JOIN again under it, with the key wrap.
std::string challenged_join(const Raw& raw, const std::string& node) {
  auto c = parse_challenge(raw.in);
  REQUIRE(c.state == ParseState::kComplete);
  REQUIRE_FALSE(c.value.job_keyed);
  const auth::Key key = auth::job_key(kSecret, kJob);
  auto wrap = auth::wrap_job_key(key, c.value.daemon_public, c.value.challenge);
  REQUIRE(wrap);
  const std::string covered = auth_covered(*wrap, m::encode_request(join_request(node)));
  return encode_auth_frame(0, auth::frame_mac(key, c.value.challenge, 0, kJob, covered), covered);
}

bool got_joined(const Raw& raw, std::size_t skip = 0) {
  for (const auto& p : raw.pushes(skip)) {
    if (std::holds_alternative<m::Joined>(p)) return true;
  }
  return false;
}

TEST_CASE("opens that arrive while the job's first JOIN registers its key wait for it",
          "[native][auth][open]") {
  Daemon d;
  auto first = opening(d, "first");
  REQUIRE(run_until(d.io, [&] { return first->in.size() >= kChallengeBytes; }));
  REQUIRE(first->first() == kChallengeType);  // no key yet: challenged, the registrar
  // Two more agents open before the first answers its challenge: parked, told nothing.
  auto b = opening(d, "b");
  auto c = opening(d, "c");
  REQUIRE(
      run_until(d.io, [&] { return d.stats().native_requests >= 3; }));  // the 3 optimistic frames
  CHECK(b->in.empty());
  CHECK(c->in.empty());
  CHECK(d.stats().opens_challenged == 1);
  // The first agent's JOIN registers the key: the parked opens go on without a challenge.
  first->send(challenged_join(*first, "first"));
  REQUIRE(run_until(d.io, [&] { return got_joined(*b) && got_joined(*c); }));
  CHECK(b->first() == m::kFirstPushType);  // JOINED, no CHALLENGE
  CHECK(c->first() == m::kFirstPushType);
  CHECK(d.stats().opens_without_challenge == 2);
  CHECK(d.stats().opens_challenged == 1);
  // All three are members: the round forms.
  REQUIRE(run_until(d.io, [&] {
    for (const auto& p : b->pushes()) {
      if (std::holds_alternative<m::RoundComplete>(p)) return true;
    }
    return false;
  }));
}

TEST_CASE("when the registrar closes or stays silent, parked opens are challenged",
          "[native][auth][open]") {
  Daemon d;
  const bool close_it = GENERATE(true, false);
  CAPTURE(close_it);
  auto first = opening(d, "first");
  REQUIRE(run_until(d.io, [&] { return first->in.size() >= kChallengeBytes; }));
  auto b = opening(d, "b");
  REQUIRE(run_until(d.io, [&] { return d.stats().native_requests >= 2; }));
  CHECK(b->in.empty());
  const auto parked_at = std::chrono::steady_clock::now();
  if (close_it) first->socket.close();
  // Closed: at once; silent: after the registration's deadline (1 s).
  REQUIRE(run_until(
      d.io, [&] { return b->in.size() >= kChallengeBytes; }, 3s));
  CHECK(b->first() == kChallengeType);
  if (!close_it) CHECK(std::chrono::steady_clock::now() - parked_at >= 900ms);
  CHECK(d.stats().opens_challenged == 2);
  // b finishes the challenged way and registers the key itself; its optimistic JOIN was
  // dropped, not handled twice.
  auto challenge = parse_challenge(b->in);
  REQUIRE(challenge.state == ParseState::kComplete);
  b->send(challenged_join(*b, "b"));
  REQUIRE(run_until(d.io, [&] { return got_joined(*b, challenge.consumed); }));
  std::size_t joined = 0;
  for (const auto& p : b->pushes(challenge.consumed)) {
    joined += std::holds_alternative<m::Joined>(p) ? 1 : 0;
    CHECK_FALSE(std::holds_alternative<m::ErrorEvent>(p));
  }
  CHECK(joined == 1);
}

}  // namespace
}  // namespace ddp::rendezvous
