// The single-node path (MembershipBackend over a LocalLink, its own membership::Job): one
// round after another, restarts counted against --max-restarts, the job's end with the root
// cause's exit code, a store empty for every round.
#include "agent/membership/local_link.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <csignal>
#include <future>
#include <thread>
#include <vector>

#include "agent/membership/membership_backend.h"
#include "tests/catch.h"
#include "tests/rendezvous/store_client/store_client.h"

namespace ddp::agent {
namespace {

namespace membership = rendezvous::membership;
using namespace std::chrono_literals;

struct Recorder final : RendezvousEvents {
  void on_round(const Round& r) override { rounds.push_back(r); }
  void on_stop_workers(std::uint64_t, const std::string&, bool) override { ++stops; }
  void on_job_finished(const membership::JobFinished& f) override { finished.push_back(f); }
  void on_lost(const Status& s) override { lost.push_back(s); }
  void on_straggler(const membership::Straggler& g) override { stragglers.push_back(g); }
  std::vector<membership::Straggler> stragglers;
  std::vector<Round> rounds;
  std::vector<membership::JobFinished> finished;
  std::vector<Status> lost;
  int stops = 0;
};

membership::Failure failure(std::uint32_t rank, std::int32_t code, int at_second) {
  membership::Failure f;
  f.rank = rank;
  f.exit_code = code;
  f.time = membership::WallTime(std::chrono::seconds(at_second));
  return f;
}

struct Harness {
  explicit Harness(int max_restarts) {
    config.nproc_per_node = 3;
    config.job.max_restarts = max_restarts;
    setup.group.master_addr = "127.0.0.1";
    setup.group.run_id = "single";
    setup.hostname = "host-a";
    auto started = LocalLink::start(io, config, setup);
    REQUIRE(started);
    link = started->get();
    backend = std::make_unique<MembershipBackend>(io, std::move(started).value());
    backend->join(events);
  }
  std::uint16_t store_port() const { return link->store_port(); }
  void settle() {
    io.restart();
    io.poll();
  }
  boost::asio::io_context io;
  AgentConfig config;
  RunSetup setup;
  Recorder events;
  LocalLink* link = nullptr;  // owned by backend
  std::unique_ptr<MembershipBackend> backend;
};

TEST_CASE("a single node is rank 0 of 1 with its own store and every worker", "[local]") {
  Harness h(0);
  CHECK(h.events.rounds.empty());  // posted, never inside join()
  h.settle();
  REQUIRE(h.events.rounds.size() == 1);
  const Round& r = h.events.rounds[0];
  CHECK(r.round == 1);
  CHECK(r.group_rank == 0);
  CHECK(r.group_world_size == 1);
  CHECK(r.world_size == 3);
  CHECK(r.restart_count == 0);
  CHECK(r.store_addr == "127.0.0.1");
  CHECK(r.store_port == h.store_port());
  CHECK(r.store_port != 0);
}

TEST_CASE("success ends the job with 0", "[local]") {
  Harness h(2);
  h.settle();
  h.backend->report_success(1);
  h.settle();
  REQUIRE(h.events.finished.size() == 1);
  CHECK(h.events.finished[0].exit_code == 0);
  CHECK_FALSE(h.events.finished[0].root_cause);
}

TEST_CASE("failures restart while restarts remain, then end with the earliest", "[local]") {
  Harness h(2);
  h.settle();
  for (int restart = 1; restart <= 2; ++restart) {
    h.backend->report_failure(h.events.rounds.back().round, {failure(0, 1, 10)});
    h.settle();
    REQUIRE(h.events.rounds.size() == static_cast<std::size_t>(restart + 1));
    CHECK(h.events.rounds.back().restart_count == restart);
    CHECK(h.events.rounds.back().store_port == h.store_port());
  }
  CHECK(h.events.finished.empty());
  CHECK(h.events.stops == 0);  // the job's stops answer this node's own reports
  // Rank 2 was killed by SIGSEGV first; rank 1 exited 3 later: the job exits 128 + 11.
  h.backend->report_failure(3, {failure(1, 3, 20), failure(2, -SIGSEGV, 15)});
  h.settle();
  REQUIRE(h.events.finished.size() == 1);
  CHECK(h.events.finished[0].exit_code == 128 + SIGSEGV);
  REQUIRE(h.events.finished[0].root_cause);
  CHECK(h.events.finished[0].root_cause->rank == 2);
  CHECK(h.events.finished[0].root_cause->node_key.rfind("host-a:", 0) == 0);
  CHECK(h.events.rounds.size() == 3);
  CHECK(h.events.lost.empty());
}

TEST_CASE("without restarts the first failure ends the job with its exit code", "[local]") {
  Harness h(0);
  h.settle();
  h.backend->report_failure(1, {failure(0, 7, 10)});
  h.settle();
  CHECK(h.events.rounds.size() == 1);
  REQUIRE(h.events.finished.size() == 1);
  CHECK(h.events.finished[0].exit_code == 7);
  bool drained = false;
  h.backend->wait_finished([&] { drained = true; });
  CHECK_FALSE(drained);  // posted
  h.settle();
  CHECK(drained);
}

TEST_CASE("a single node's root cause keeps its last lines as a daemon's does", "[local]") {
  Harness h(0);
  h.settle();
  membership::Failure f = failure(1, 7, 10);
  f.diagnosis.last_lines = {"step 3", "ValueError: bad"};
  f.diagnosis.stack_head = {"Current thread"};
  h.backend->report_failure(1, {f});
  h.settle();
  REQUIRE(h.events.finished.size() == 1);
  REQUIRE(h.events.finished[0].root_cause);
  CHECK(h.events.finished[0].root_cause->diagnosis.last_lines == f.diagnosis.last_lines);
  CHECK(h.events.finished[0].root_cause->diagnosis.stack_head.empty());  // as on the wire
}

TEST_CASE("a node that leaves hears nothing more", "[local]") {
  Harness h(3);
  h.settle();
  h.backend->leave("agent received SIGTERM");
  h.backend->report_failure(1, {failure(0, 1, 10)});
  h.settle();
  CHECK(h.events.rounds.size() == 1);
  CHECK(h.events.finished.empty());
  CHECK(h.events.lost.empty());
}

TEST_CASE("every round after the first finds the store empty", "[local]") {
  Harness h(1);
  h.settle();
  // The backend's io_context on a thread of its own; the blocking store clients below are the
  // workers, and the failure report goes through the io_context like the agent's.
  auto work = boost::asio::make_work_guard(h.io);
  h.io.restart();
  std::thread server([&] { h.io.run(); });
  auto old = rendezvous::StoreClient::connect("127.0.0.1", h.store_port(), 5s);
  REQUIRE(old);
  REQUIRE((*old)->set("rank_1", "addr"));
  CHECK((*old)->get("rank_1").value() == "addr");
  std::promise<std::size_t> rounds;
  boost::asio::post(h.io, [&] {
    h.backend->report_failure(1, {failure(1, 13, 10)});
    boost::asio::post(h.io, [&] { rounds.set_value(h.events.rounds.size()); });
  });
  CHECK(rounds.get_future().get() == 2);
  // The old attempt's connection is closed, and the new attempt does not see its key.
  CHECK_FALSE((*old)->num_keys().is_ok());
  auto fresh = rendezvous::StoreClient::connect("127.0.0.1", h.store_port(), 5s);
  REQUIRE(fresh);
  CHECK((*fresh)->num_keys().value() == 0);
  CHECK_FALSE((*fresh)->check({"rank_1"}).value());
  work.reset();
  h.io.stop();
  server.join();
}

TEST_CASE("nothing is delivered after close", "[local]") {
  Harness h(0);
  h.backend->close();
  h.settle();
  CHECK(h.events.rounds.empty());
  bool called = false;
  h.backend->wait_finished([&] { called = true; });
  h.settle();
  CHECK_FALSE(called);
}

}  // namespace
}  // namespace ddp::agent
