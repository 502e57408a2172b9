// The membership backend over a fake link: what it does with the pushes whatever the
// transport (held rounds, one stop, lost once, nothing after the end, join progress).
#include "agent/membership/membership_backend.h"

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

struct Recorder final : RendezvousEvents {
  void on_round(const Round& r) override { rounds.push_back(r.round); }
  void on_stop_workers(std::uint64_t round, const std::string& detail, bool) override {
    stops.emplace_back(round, detail);
  }
  void on_job_finished(const membership::JobFinished& f) override { finished.push_back(f); }
  void on_lost(const Status& s) override { lost.push_back(s); }
  void on_straggler(const membership::Straggler& g) override { stragglers.push_back(g); }
  std::vector<membership::Straggler> stragglers;
  std::vector<std::uint64_t> rounds;
  std::vector<std::pair<std::uint64_t, std::string>> stops;
  std::vector<membership::JobFinished> finished;
  std::vector<Status> lost;
};

struct FakeLink final : MembershipLink {
  void open(LinkEvents& e) override { events = &e; }
  void send(const membership::Request& r) override { sent.push_back(r); }
  rendezvous::Server* worker_store() override { return nullptr; }
  void wait_finished(std::function<void()> done) override { drained = std::move(done); }
  void close() override { ++closes; }
  LinkEvents* events = nullptr;
  std::vector<membership::Request> sent;
  std::function<void()> drained;
  int closes = 0;
};

membership::RoundComplete round(std::uint64_t n, std::uint32_t nodes = 2) {
  membership::RoundComplete r;
  r.round = n;
  r.group_world_size = nodes;
  r.local_world_size = 1;
  r.world_size = nodes;
  return r;
}

struct Harness {
  Harness() {
    auto owned = std::make_unique<FakeLink>();
    link = owned.get();
    backend = std::make_unique<MembershipBackend>(io, std::move(owned));
    backend->join(events);
    REQUIRE(link->events != nullptr);
  }
  void push(const membership::Payload& p) { link->events->on_payload(p); }
  void settle() {
    io.restart();
    io.poll();
  }
  template <typename T>
  int sent() const {
    int n = 0;
    for (const auto& r : link->sent) n += std::holds_alternative<T>(r) ? 1 : 0;
    return n;
  }
  boost::asio::io_context io;
  Recorder events;
  FakeLink* link = nullptr;  // owned by backend
  std::unique_ptr<MembershipBackend> backend;
};

TEST_CASE("a newer round is held until this node answered, with one stop", "[membership]") {
  Harness h;
  h.push(round(1));
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1});
  h.push(round(2));
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1});
  REQUIRE(h.events.stops.size() == 1);
  CHECK(h.events.stops[0] == std::make_pair(std::uint64_t{1}, std::string("the job re-formed")));
  h.link->events->on_reform("the coordinator left");  // told already: no second stop
  h.push(round(3));                                   // the newest is the one held
  CHECK(h.events.stops.size() == 1);
  h.backend->workers_stopped(1);
  CHECK(h.sent<membership::WorkersStopped>() == 1);
  CHECK(h.events.rounds.size() == 1);  // posted, never inside the answer
  h.settle();
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1, 3});
  h.push(round(4));  // round 3 runs unanswered: held again, stopped once
  CHECK(h.events.stops.size() == 2);
  CHECK(h.events.stops[1].first == 3);
}

TEST_CASE("a round pushed while the held one waits for delivery replaces it", "[membership]") {
  Harness h;
  h.push(round(1));
  h.push(round(2));
  h.backend->report_failure(1, {});
  h.push(round(3));  // before the held round 2 was delivered: rounds only grow
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1});
  h.settle();
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1, 3});
  CHECK(h.events.stops.size() == 1);
}

TEST_CASE("a round after the answer is delivered at once", "[membership]") {
  Harness h;
  h.push(round(1));
  h.backend->report_failure(1, {});
  h.push(membership::StopWorkers{1, membership::StopReason::kWorkerFailed, "rank 0 failed", {}});
  h.push(round(2));
  CHECK(h.events.rounds == std::vector<std::uint64_t>{1, 2});
  REQUIRE(h.events.stops.size() == 1);  // the job's own, passed on
  CHECK(h.events.stops[0].second == "rank 0 failed");
  CHECK(h.sent<membership::ReportFailure>() == 1);
}

TEST_CASE("the job's stop of the running round counts as the one stop", "[membership]") {
  Harness h;
  h.push(round(1));
  h.push(membership::StopWorkers{1, membership::StopReason::kNodeLost, "node b left", {}});
  h.push(round(2));
  h.link->events->on_reform("the coordinator left");
  CHECK(h.events.stops.size() == 1);
  CHECK(h.events.rounds.size() == 1);
}

TEST_CASE("a re-form stops the running round once, and nothing when none runs", "[membership]") {
  Harness h;
  h.link->events->on_reform("the coordinator left");
  CHECK(h.events.stops.empty());
  h.push(round(1));
  h.link->events->on_reform("the coordinator left");
  h.link->events->on_reform("the coordinator left");
  REQUIRE(h.events.stops.size() == 1);
  CHECK(h.events.stops[0].second == "the coordinator left");
  h.backend->report_success(1);
  h.link->events->on_reform("the coordinator left");
  CHECK(h.events.stops.size() == 1);
}

TEST_CASE("lost is told once, and nothing follows", "[membership]") {
  Harness h;
  h.push(round(1));
  h.push(membership::ErrorEvent{ErrorCode::kPeerGone, "removed: missed heartbeats"});
  h.link->events->on_link_lost(Status(ErrorCode::kIo, "connection closed"));
  REQUIRE(h.events.lost.size() == 1);
  CHECK(h.events.lost[0].code() == ErrorCode::kPeerGone);
  CHECK(h.events.lost[0].message() == "removed: missed heartbeats");
  h.push(round(2));
  h.push(membership::JobFinished{0, "", std::nullopt, {}, false});
  CHECK(h.events.rounds.size() == 1);
  CHECK(h.events.finished.empty());
}

TEST_CASE("a rendezvous error is named as one", "[membership]") {
  Harness h;
  h.push(membership::ErrorEvent{ErrorCode::kTimeout, "join timed out"});
  REQUIRE(h.events.lost.size() == 1);
  CHECK(h.events.lost[0].message() == "rendezvous error: join timed out");
}

TEST_CASE("after the job finished only a lost link may follow", "[membership]") {
  Harness h;
  h.push(round(1));
  h.backend->report_success(1);
  CHECK(h.sent<membership::ReportSuccess>() == 1);
  h.push(membership::JobFinished{0, "done", std::nullopt, {}, false});
  h.push(membership::JobFinished{0, "done", std::nullopt, {}, false});
  h.push(round(2));
  h.push(membership::StopWorkers{2, membership::StopReason::kNodeLost, "x", {}});
  CHECK(h.events.finished.size() == 1);
  CHECK(h.events.rounds.size() == 1);
  CHECK(h.events.stops.empty());
  bool drained = false;
  h.backend->wait_finished([&] { drained = true; });
  REQUIRE(h.link->drained);
  h.link->drained();
  CHECK(drained);
  h.link->events->on_link_lost(Status(ErrorCode::kIo, "the daemon closed the connection"));
  CHECK(h.events.lost.size() == 1);
}

TEST_CASE("nothing after leave or close", "[membership]") {
  Harness h;
  h.push(round(1));
  h.backend->leave("agent received SIGTERM");
  CHECK(h.sent<membership::Leave>() == 1);
  h.push(round(2));
  h.link->events->on_link_lost(Status(ErrorCode::kIo, "closed"));
  CHECK(h.events.rounds.size() == 1);
  CHECK(h.events.lost.empty());
  bool drained = false;
  h.backend->wait_finished([&] { drained = true; });
  h.backend->close();
  h.backend->close();
  CHECK(h.link->closes == 1);
  h.link->drained();  // the link answers after close: not passed on
  CHECK_FALSE(drained);
}

TEST_CASE("the join shows its progress until the first round", "[membership]") {
  Harness h;
  h.push(membership::Joined{1, false});
  // The backend asks after 2 s: wait for the question, with a deadline.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  h.io.restart();
  while (h.sent<membership::QueryWaiting>() == 0 && std::chrono::steady_clock::now() < deadline) {
    h.io.run_one_for(100ms);
  }
  CHECK(h.sent<membership::QueryWaiting>() == 1);
  h.push(membership::Waiting{1, 2, 2, 5000ms, std::nullopt});  // logged
  h.push(round(1));
  // The first round stopped the questions: the timer is cancelled, so the loop runs dry.
  h.io.restart();
  h.io.run_for(50ms);
  CHECK(h.io.stopped());
  CHECK(h.sent<membership::QueryWaiting>() == 1);
}

}  // namespace
}  // namespace ddp::agent
