// K nodes through a whole job (join, heartbeat, a failure fanned out to all, restart, success):
// the work per request must not grow with the job. Checked by counting the loop visits the
// state machine makes (deterministic: a per-request scan of all nodes would make it ~K^2) and
// by the event count (no per-join broadcast). Time is measured where it is a figure, not a
// pass/fail bound: bench/rendezvous (4000 real agents against the daemon).
#include "tests/catch.h"
#include "tests/rendezvous/membership/harness.h"

namespace ddp::rendezvous::membership::test {
namespace {

struct Cost {
  std::size_t events = 0;
  std::uint64_t visits = 0;
};

Cost run_job(std::uint32_t k) {
  Harness h;
  h.config.min_nodes = h.config.max_nodes = k;
  h.config.max_restarts = 1;
  Cost cost;
  auto count = [&cost](const Events& e) { cost.events += e.size(); };
  for (NodeId id = 1; id <= k; ++id) count(h.join(id, 8));
  REQUIRE(h.job().state() == Job::State::kRunning);
  h.now += 1s;
  for (NodeId id = 1; id <= k; ++id) count(h.heartbeat(id));
  count(h.send(k, ReportFailure{1, {failure(8 * (k - 1), 1, 1)}}));
  for (NodeId id = 1; id < k; ++id) count(h.send(id, WorkersStopped{1}));
  REQUIRE(h.job().round() == 2);
  for (NodeId id = 1; id <= k; ++id) count(h.send(id, ReportSuccess{2}));
  REQUIRE(h.job().state() == Job::State::kFinished);
  cost.visits = h.job().visits();
  return cost;
}

TEST_CASE("a 4000-node job: linear events and loop visits", "[scale]") {
  const Cost c = run_job(4000);
  // Joined, RoundComplete x2, StopWorkers, JobFinished per node; nothing else.
  CHECK(c.events == 5 * 4000);
  INFO("loop visits: " << c.visits);
  CHECK(c.visits <= 12 * 4000);
}

TEST_CASE("loop visits per node stay constant from 1000 to 16000 nodes", "[scale]") {
  const double per_node_1k = static_cast<double>(run_job(1000).visits) / 1000;
  const double per_node_16k = static_cast<double>(run_job(16000).visits) / 16000;
  INFO("visits per node: " << per_node_1k << " at 1000, " << per_node_16k << " at 16000");
  CHECK(per_node_16k <= per_node_1k * 1.05);
}

}  // namespace
}  // namespace ddp::rendezvous::membership::test
