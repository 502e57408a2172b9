// Test helper for job-secret tests: an RdzvClient agent on the test's io_context that records
// its JOIN reply and every push, started with or without a job secret.
#pragma once

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/membership/messages.h"
#include "rendezvous/rdzv_client.h"
#include "tests/rendezvous/run_until.h"

namespace ddp::rendezvous::test {

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
inline std::unique_ptr<Agent> start_agent(boost::asio::io_context& io, std::uint16_t port,
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

}  // namespace ddp::rendezvous::test
