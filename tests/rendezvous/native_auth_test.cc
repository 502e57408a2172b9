// Job secrets end to end inside one process: an embedded Server and signing RdzvClients on one
// io_context (loopback sockets). Right secrets complete a round, on a pinned job (the embedded
// daemon of a ddprun host) and on a job registered by its first JOIN (trust on first use);
// wrong and missing secrets are refused with kUnauthenticated and the job goes on untouched;
// a store query on an authenticated connection still works.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/auth/auth.h"
#include "rendezvous/membership/messages.h"
#include "rendezvous/rdzv_client.h"
#include "rendezvous/server.h"
#include "tests/catch.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous {
namespace {

using namespace std::chrono_literals;
namespace m = membership;

const std::string kSecret = "0123456789abcdef-the-job-secret";

using test::run_until;

// An RdzvClient agent that records its JOIN reply and every push.
struct Agent {
  std::shared_ptr<RdzvClient> client;
  std::optional<Result<membership::Joined>> joined;
  std::vector<membership::Payload> events;
  template <typename T>
  const T* last() const {
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (const T* p = std::get_if<T>(&*it)) return p;
    }
    return nullptr;
  }
};

// Connects to 127.0.0.1:`port` (REQUIREd within 2 s) and sends `request`, signed with `secret`.
std::unique_ptr<Agent> start_agent(boost::asio::io_context& io, std::uint16_t port,
                                   membership::JoinRequest request,
                                   std::optional<std::string> secret) {
  auto agent = std::make_unique<Agent>();
  Agent* a = agent.get();
  a->client = RdzvClient::create(
      io, {[a](const membership::Payload& p) { a->events.push_back(p); }, [](const Status&) {}});
  std::optional<Status> connected;
  a->client->connect("127.0.0.1", port, std::chrono::seconds(2), [&](Status s) { connected = s; });
  REQUIRE(run_until(io, [&] { return connected.has_value(); }));
  REQUIRE(connected->is_ok());
  if (secret) a->client->use_secret(*secret);
  a->client->join(std::move(request), [a](Result<membership::Joined> j) { a->joined = j; });
  return agent;
}

std::unique_ptr<Agent> join_agent(boost::asio::io_context& io, std::uint16_t port, std::string key,
                                  std::optional<std::string> secret) {
  m::JoinRequest r;
  r.run_id = "secret-job";
  r.config.min_nodes = 2;
  r.config.max_nodes = 2;
  r.node = {std::move(key), "127.0.0.1", 40000, 1};
  return start_agent(io, port, std::move(r), std::move(secret));
}

ServerOptions loopback(bool pinned) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  if (pinned) options.auth.pinned.push_back({"secret-job", auth::job_key(kSecret, "secret-job")});
  return options;
}

TEST_CASE("agents with the job secret complete a round, wrong or missing ones are refused",
          "[native][auth]") {
  const bool pinned = GENERATE(true, false);
  CAPTURE(pinned);
  boost::asio::io_context io;
  auto server = Server::start(io, loopback(pinned));
  REQUIRE(server);
  auto a = join_agent(io, (*server)->port(), "a", kSecret);
  REQUIRE(run_until(io, [&] { return a->joined.has_value(); }));
  REQUIRE(a->joined->is_ok());

  auto wrong = join_agent(io, (*server)->port(), "wrong", std::string("not-the-job-secret!"));
  auto none = join_agent(io, (*server)->port(), "none", std::nullopt);
  REQUIRE(run_until(io, [&] { return wrong->joined && none->joined; }));
  CHECK(wrong->joined->status().code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(wrong->joined->status().message(), Catch::Contains("does not match"));
  CHECK(none->joined->status().code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(none->joined->status().message(), Catch::Contains("secret_file"));

  // The refused agents changed nothing: the job still waits for its second node.
  auto b = join_agent(io, (*server)->port(), "b", kSecret);
  REQUIRE(
      run_until(io, [&] { return a->last<m::RoundComplete>() && b->last<m::RoundComplete>(); }));
  CHECK(a->last<m::RoundComplete>()->group_world_size == 2);

  std::optional<Result<std::string>> reply;
  b->client->store(Request{.op = Op::kAdd, .key = "k", .delta = 5},
                   [&](Result<std::string> r) { reply = r; });
  REQUIRE(run_until(io, [&] { return reply.has_value(); }));
  REQUIRE(reply->is_ok());

  // Heartbeats and reports are signed too: success from both finishes the job with 0.
  a->client->send_request(m::ReportSuccess{a->last<m::RoundComplete>()->round});
  b->client->send_request(m::ReportSuccess{b->last<m::RoundComplete>()->round});
  REQUIRE(run_until(io, [&] { return a->last<m::JobFinished>() && b->last<m::JobFinished>(); }));
  CHECK(a->last<m::JobFinished>()->exit_code == 0);
  CHECK(a->last<m::ErrorEvent>() == nullptr);
  for (auto* agent : {a.get(), b.get(), wrong.get(), none.get()}) agent->client->close();
}

TEST_CASE("a secretless job refuses an agent that has a secret", "[native][auth]") {
  boost::asio::io_context io;
  auto server = Server::start(io, loopback(false));
  REQUIRE(server);
  auto a = join_agent(io, (*server)->port(), "a", std::nullopt);
  REQUIRE(run_until(io, [&] { return a->joined.has_value(); }));
  REQUIRE(a->joined->is_ok());
  auto b = join_agent(io, (*server)->port(), "b", kSecret);
  REQUIRE(run_until(io, [&] { return b->joined.has_value(); }));
  CHECK(b->joined->status().code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(b->joined->status().message(), Catch::Contains("without a secret"));
  a->client->close();
  b->client->close();
}

TEST_CASE("require-secret refuses a secretless job and serves one with a secret",
          "[native][auth]") {
  boost::asio::io_context io;
  auto options = loopback(false);
  options.auth.require_secret = true;
  auto server = Server::start(io, options);
  REQUIRE(server);
  auto plain = join_agent(io, (*server)->port(), "a", std::nullopt);
  auto keyed = join_agent(io, (*server)->port(), "b", kSecret);
  REQUIRE(run_until(io, [&] { return plain->joined && keyed->joined; }));
  CHECK(plain->joined->status().code() == ErrorCode::kUnauthenticated);
  CHECK_THAT(plain->joined->status().message(), Catch::Contains("--require-secret"));
  CHECK(keyed->joined->is_ok());
  plain->client->close();
  keyed->client->close();
}

}  // namespace
}  // namespace ddp::rendezvous
