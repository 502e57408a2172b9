// Authenticated opens without the challenge round trip (AUTH_OPEN), end to end inside one
// process: an embedded Server, raw sockets that write the agent's bytes (so a capture can be
// replayed byte for byte), and signing RdzvClients, all on one io_context (loopback). What an
// open does, seen from the wire and from the daemon's counters: it goes on without a challenge
// when the daemon knows the job's key; a replay of its bytes is challenged and changes nothing;
// a stale stamp is challenged and the agent finishes the challenged way; the first agent of a
// job learnt by trust on first use is challenged and the later ones are not.
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/wall_clock.h"
#include "rendezvous/auth/auth.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"
#include "rendezvous/rdzv_client.h"
#include "rendezvous/server.h"
#include "tests/rendezvous/auth_agent.h"
#include "tests/rendezvous/raw_agent.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::tcp;
namespace m = membership;
using test::run_until;

const std::string kSecret = "0123456789abcdef-the-open-secret";
const std::string kJob = "open-job";

m::JoinRequest join_request(const std::string& node) { return test::join_request(kJob, 2, node); }

std::string open_bytes(const m::JoinRequest& join, std::int64_t stamp) {
  return test::open_bytes(kSecret, join, stamp);
}

using test::Agent;
using test::Raw;
using test::start_agent;

std::unique_ptr<Agent> join_agent(boost::asio::io_context& io, std::uint16_t port,
                                  const std::string& node, const std::string& secret) {
  return start_agent(io, port, join_request(node), secret);
}

constexpr std::size_t kChallengeBytes = 66;

ServerOptions pinned_fresh() {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.auth.pinned.push_back({kJob, auth::job_key(kSecret, kJob), true});
  return options;
}

TEST_CASE(
    "an open for a known key joins without a challenge, its replay is challenged and "
    "changes nothing",
    "[native][auth][open]") {
  boost::asio::io_context io;
  auto server = Server::start(io, pinned_fresh());
  REQUIRE(server);
  const std::uint16_t port = (*server)->port();

  Raw a(io);
  a.connect(io, port);
  const std::string captured = open_bytes(join_request("a"), unix_ms_now());
  a.send(captured);
  REQUIRE(run_until(io, [&] { return !a.pushes().empty(); }));
  CHECK(a.first() == m::kFirstPushType);  // JOINED first: no CHALLENGE came
  CHECK(std::holds_alternative<m::Joined>(a.pushes().front()));
  CHECK((*server)->stats().opens_without_challenge == 1);

  // The same bytes on another connection: challenged; the optimistic JOIN is dropped.
  Raw replay(io);
  replay.connect(io, port);
  replay.send(captured);
  REQUIRE(run_until(io, [&] { return replay.in.size() >= kChallengeBytes; }));
  CHECK(replay.first() == kChallengeType);
  CHECK((*server)->stats().opens_challenged == 1);

  // The job still waits for its second node: a real agent completes the round with a.
  auto b = join_agent(io, port, "b", kSecret);
  REQUIRE(run_until(io, [&] { return b->last<m::RoundComplete>() != nullptr; }));
  CHECK(b->joined->is_ok());
  CHECK(b->last<m::RoundComplete>()->group_world_size == 2);
  REQUIRE(run_until(io, [&] {
    for (const auto& p : a.pushes()) {
      if (std::holds_alternative<m::RoundComplete>(p)) return true;
    }
    return false;
  }));
  CHECK((*server)->stats().opens_without_challenge == 2);  // a and b
  CHECK(replay.in.size() == kChallengeBytes);  // nothing but the CHALLENGE: no JOINED, no ERROR
  b->client->close();
}

TEST_CASE(
    "an open stamped outside the window is challenged and the agent joins the "
    "challenged way",
    "[native][auth][open]") {
  boost::asio::io_context io;
  auto server = Server::start(io, pinned_fresh());
  REQUIRE(server);
  Raw a(io);
  a.connect(io, (*server)->port());
  const m::JoinRequest join = join_request("a");
  a.send(open_bytes(join, unix_ms_now() - 60'000));  // a clock a minute behind
  REQUIRE(run_until(io, [&] { return a.in.size() >= kChallengeBytes; }));
  REQUIRE(a.first() == kChallengeType);
  auto challenge = parse_challenge(a.in);
  REQUIRE(challenge.state == ParseState::kComplete);
  CHECK(challenge.value.job_keyed);
  const std::string covered = auth_covered(std::nullopt, m::encode_request(join));
  const auth::Mac mac =
      auth::frame_mac(auth::job_key(kSecret, kJob), challenge.value.challenge, 0, kJob, covered);
  a.send(encode_auth_frame(0, mac, covered));
  REQUIRE(run_until(io, [&] { return !a.pushes(challenge.consumed).empty(); }));
  CHECK(std::holds_alternative<m::Joined>(a.pushes(challenge.consumed).front()));
  CHECK((*server)->stats().opens_challenged == 1);
  CHECK((*server)->stats().opens_without_challenge == 0);
}

TEST_CASE("trust on first use: the first agent is challenged, later agents open without",
          "[native][auth][open]") {
  boost::asio::io_context io;
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.auth.open_rules.window_ms = 300;
  const auto started = std::chrono::steady_clock::now();
  auto server = Server::start(io, options);
  REQUIRE(server);
  // The start rule: opens stamped within the window after the daemon's start are challenged.
  REQUIRE(run_until(
      io, [&] { return std::chrono::steady_clock::now() > started + 400ms; }, 2s));
  const std::uint16_t port = (*server)->port();

  auto a = join_agent(io, port, "a", kSecret);
  REQUIRE(run_until(io, [&] { return a->joined.has_value(); }));
  REQUIRE(a->joined->is_ok());
  CHECK((*server)->stats().opens_challenged == 1);  // the key was registered by this JOIN
  auto wrong = join_agent(io, port, "wrong", "not-the-job-secret!!");
  REQUIRE(run_until(io, [&] { return wrong->joined.has_value(); }));
  CHECK(wrong->joined->status().code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(wrong->joined->status().message(), Catch::Contains("does not match"));
  auto b = join_agent(io, port, "b", kSecret);
  REQUIRE(
      run_until(io, [&] { return b->last<m::RoundComplete>() && a->last<m::RoundComplete>(); }));
  CHECK(b->joined->is_ok());
  CHECK((*server)->stats().opens_challenged == 1);
  CHECK((*server)->stats().opens_without_challenge == 2);  // wrong (then refused) and b

  // Signed heartbeats and reports over the open's challenge: success finishes the job with 0.
  a->client->report_success(a->last<m::RoundComplete>()->round);
  b->client->report_success(b->last<m::RoundComplete>()->round);
  REQUIRE(run_until(io, [&] { return a->last<m::JobFinished>() && b->last<m::JobFinished>(); }));
  CHECK(b->last<m::JobFinished>()->exit_code == 0);
  CHECK(b->last<m::ErrorEvent>() == nullptr);
  for (auto* agent : {a.get(), b.get(), wrong.get()}) agent->client->close();
}

}  // namespace
}  // namespace ddp::rendezvous
