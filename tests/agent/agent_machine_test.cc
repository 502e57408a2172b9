// The agent policy driven by fakes: every test plays a sequence of events (rounds, pushes,
// worker ends, signals, time) and checks what the machine asked of its mechanisms, in order,
// and how it ended.
#include "agent/agent_machine.h"

#include <csignal>
#include <optional>

#include "tests/agent/fake_mechanisms.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
using testing::Log;
using State = AgentMachine::State;
namespace membership = rendezvous::membership;

struct Harness {
  Harness()
      : backend(log),
        workers(log),
        report(log),
        machine(backend, workers, clock, report, {.finish_linger = 5s, .run_id = "job"},
                [this](int code) {
                  exit = code;
                  log.push_back("exit " + std::to_string(code));
                }) {
    machine.start();
  }

  static Round round(std::uint64_t n, int world = 4, int restart = 0) {
    Round r;
    r.round = n;
    r.world_size = world;
    r.restart_count = restart;
    return r;
  }
  static membership::JobFinished finished(int code) {
    membership::JobFinished f;
    f.exit_code = code;
    if (code != 0) f.root_cause = membership::Failure{};
    return f;
  }
  // The log from entry `from` on.
  Log since(std::size_t from) const {
    return Log(log.begin() + static_cast<long>(from), log.end());
  }

  Log log;
  testing::FakeBackend backend;
  testing::FakeWorkers workers;
  testing::FakeClock clock;
  testing::FakeReport report;
  std::optional<int> exit;
  AgentMachine machine;
};

TEST_CASE("a round runs, succeeds, and the job's end waits for the finish barrier", "[machine]") {
  Harness h;
  CHECK(h.log == Log{"join"});
  CHECK(h.machine.state() == State::kJoining);
  h.machine.on_round(Harness::round(1));
  CHECK(h.machine.state() == State::kRunning);
  h.workers.done(Outcome::Kind::kSucceeded);
  CHECK(h.machine.state() == State::kReported);
  h.machine.on_job_finished(Harness::finished(0));
  CHECK(h.machine.state() == State::kFinishing);
  CHECK_FALSE(h.exit);  // the other nodes have not all heard of the end yet
  h.backend.drained();
  REQUIRE(h.exit == 0);
  CHECK(h.log == Log{"join", "start round 1 world 4 restart 0", "success 1", "kill workers",
                     "report exit 0 with local result", "wait finished", "kill workers", "close",
                     "exit 0"});
  CHECK(h.clock.pending() == 0);  // the linger timer is gone
}

TEST_CASE("the finish barrier gives up after the linger", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.done(Outcome::Kind::kSucceeded);
  h.machine.on_job_finished(Harness::finished(0));
  h.clock.advance(4900ms);
  CHECK_FALSE(h.exit);
  h.clock.advance(100ms);
  CHECK(h.exit == 0);
  h.backend.drained();  // late: changes nothing
  CHECK(h.log.back() == "exit 0");
}

TEST_CASE("a worker failure is reported, with restarts left the next round starts", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.done(Outcome::Kind::kFailed, 0, 2);
  CHECK(h.log.back() == "failure 1 x2");
  h.machine.on_round(Harness::round(2, 4, 1));  // the job restarts (its decision)
  CHECK(h.log.back() == "start round 2 world 4 restart 1");
  CHECK(h.machine.state() == State::kRunning);
  h.workers.done(Outcome::Kind::kSucceeded);
  CHECK(h.log.back() == "success 2");
}

TEST_CASE("a worker failure without restarts left ends with the job's exit code", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.done(Outcome::Kind::kFailed, 0, 1);
  h.machine.on_job_finished(Harness::finished(3));
  h.backend.drained();
  CHECK(h.exit == 3);
  CHECK(h.since(2) == Log{"failure 1 x1", "kill workers", "report exit 3 with local result",
                          "wait finished", "kill workers", "close", "exit 3"});
}

TEST_CASE("an agent error is reported as this node's failure", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.done(Outcome::Kind::kError, 0, 1);
  CHECK(h.log.back() == "failure 1 x1");
}

TEST_CASE("a failure pushed from another node stops the workers and ends like the job",
          "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_stop_workers(1, "worker rank 5 on node b failed", false);
  CHECK(h.machine.state() == State::kStopping);
  CHECK(h.log.back() == "stop workers 15");
  h.machine.on_stop_workers(1, "again", false);  // duplicates are harmless
  CHECK(h.log.back() == "stop workers 15");
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(h.log.back() == "stopped 1");
  h.machine.on_job_finished(Harness::finished(5));
  h.backend.drained();
  CHECK(h.exit == 5);
}

TEST_CASE("a lost node: stop, answer once, run the smaller round (scale-down)", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1, 4));
  h.machine.on_stop_workers(1, "node c (group rank 1) left", false);
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  h.machine.on_stop_workers(1, "late duplicate", false);  // answered already: no second answer
  h.machine.on_round(Harness::round(2, 2));
  CHECK(h.since(1) == Log{"start round 1 world 4 restart 0", "stop workers 15", "stopped 1",
                          "start round 2 world 2 restart 0"});
  CHECK(h.workers.started.back().world_size == 2);
}

TEST_CASE("an arriving node: the running round stops and a larger one starts (scale-up)",
          "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1, 2));
  h.machine.on_stop_workers(1, "node d joined", false);
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  h.machine.on_round(Harness::round(2, 4));
  CHECK(h.workers.started.back().world_size == 4);
  CHECK(h.machine.state() == State::kRunning);
}

TEST_CASE("a node waiting to join answers a stop of a round it is not in", "[machine]") {
  Harness h;
  h.machine.on_stop_workers(3, "node e joined", false);
  CHECK(h.log.back() == "stopped 3");
  CHECK(h.machine.state() == State::kJoining);
  h.machine.on_round(Harness::round(4));
  CHECK(h.log.back() == "start round 4 world 4 restart 0");
}

TEST_CASE("SIGTERM while waiting for peers leaves the job at once", "[machine]") {
  Harness h;
  h.machine.on_signal(SIGTERM);
  CHECK(h.exit == 128 + SIGTERM);
  CHECK(h.log == Log{"join", "leave: agent received SIGTERM", "kill workers", "close", "exit 143"});
}

TEST_CASE("SIGINT while waiting for the job's answer leaves the job", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.done(Outcome::Kind::kSucceeded);
  h.machine.on_signal(SIGINT);
  CHECK(h.exit == 128 + SIGINT);
}

TEST_CASE("SIGTERM while running stops the workers, then leaves", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_signal(SIGTERM);
  CHECK(h.log.back() == "stop workers 15");
  CHECK_FALSE(h.exit);
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(h.exit == 128 + SIGTERM);
  CHECK(h.since(2) == Log{"stop workers 15", "leave: agent received SIGTERM", "kill workers",
                          "close", "exit 143"});
}

TEST_CASE("SIGINT while running, then a second SIGINT kills the workers at once", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_signal(SIGINT);
  CHECK(h.log.back() == "stop workers 2");
  h.machine.on_signal(SIGINT);
  CHECK(h.log.back() == "kill workers");
  h.workers.done(Outcome::Kind::kInterrupted, SIGINT);
  CHECK(h.exit == 128 + SIGINT);
}

TEST_CASE("a join that times out ends the node with 1 and starts nothing", "[machine]") {
  Harness h;
  h.machine.on_lost(Status(ErrorCode::kTimeout, "rendezvous error: the join timed out"));
  CHECK(h.exit == 1);
  CHECK(h.workers.started.empty());
  CHECK(h.log == Log{"join", "kill workers", "close", "exit 1"});
}

TEST_CASE("losing the rendezvous while running stops the workers, then exits 1", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_lost(Status(ErrorCode::kPeerGone, "lost the rendezvous daemon: EOF"));
  CHECK(h.log.back() == "stop workers 15");
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(h.exit == 1);
  CHECK(std::find(h.log.begin(), h.log.end(), "stopped 1") == h.log.end());  // nobody to tell
}

TEST_CASE("a signal before the rendezvous is lost keeps the signal's exit code", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_signal(SIGTERM);
  h.machine.on_lost(Status(ErrorCode::kPeerGone, "lost the rendezvous daemon: EOF"));
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(h.exit == 128 + SIGTERM);
}

TEST_CASE("the job finishing while workers still run kills them, their end is ignored",
          "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_job_finished(Harness::finished(7));
  CHECK(h.log.back() == "wait finished");
  h.workers.done(Outcome::Kind::kInterrupted, SIGKILL);
  h.machine.on_lost(Status(ErrorCode::kPeerGone, "the daemon closed"));  // expected at the end
  CHECK(h.exit == 7);
  CHECK(std::count(h.log.begin(), h.log.end(), "report exit 7") == 1);
}

TEST_CASE("hung workers while running: stacks and a failure, while stopping: nothing",
          "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  HangReport report;
  report.local_ranks = {1};
  h.workers.hung(report);
  CHECK(h.log.back() == "abort hung 1");
  h.workers.done(Outcome::Kind::kFailed, 0, 1);
  CHECK(h.log.back() == "failure 1 x1");
  h.machine.on_round(Harness::round(2, 4, 1));
  h.machine.on_stop_workers(2, "node b failed", false);
  h.workers.hung(report);  // the group is stopping anyway
  CHECK(h.log.back() == "stop workers 15");
}

TEST_CASE("a stop while the hung group's stacks are taken does not cut the abort short",
          "[machine]") {
  // Seen under load: this node's hang watch fired first, but another node's report arrived
  // while the stacks were taken; the stop's SIGTERM ended the group as stopped, and the rank
  // that stalled first was never reported (the other node's rank became the root cause).
  Harness h;
  h.machine.on_round(Harness::round(1));
  HangReport report;
  report.local_ranks = {0};
  h.workers.hung(report);
  CHECK(h.log.back() == "abort hung 1");
  h.machine.on_stop_workers(1, "worker rank 0 on node a failed with exit code 124", true);
  CHECK(h.log.back() == "abort hung 1");  // no SIGTERM, no second judgement
  h.workers.done(Outcome::Kind::kFailed, 0, 1);
  CHECK(h.log.back() == "failure 1 x1");
}

TEST_CASE("a stop for a worker hung elsewhere judges this node's silent workers", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  HangReport report;
  report.local_ranks = {1, 0};
  h.workers.hung_beside_peer = report;
  h.machine.on_stop_workers(1, "worker rank 0 on node a failed with exit code 124", true);
  CHECK(h.log.back() == "abort hung 2");
  CHECK(h.machine.state() == State::kStopping);
  h.workers.done(Outcome::Kind::kFailed, 0, 2);
  CHECK(h.log.back() == "failure 1 x2");
  // Nobody silent here: a plain stop. A stop for another cause asks no judgement.
  h.machine.on_round(Harness::round(2, 4, 1));
  h.machine.on_stop_workers(2, "worker rank 0 on node a failed with exit code 124", true);
  CHECK(h.log.back() == "stop workers 15");
  h.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(h.log.back() == "stopped 2");
  h.machine.on_round(Harness::round(3, 4, 2));
  h.machine.on_stop_workers(3, "node b left", false);
  CHECK(h.log.back() == "stop workers 15");
  CHECK(std::count(h.log.begin(), h.log.end(), "judge hang elsewhere") == 2);
}

TEST_CASE("a round arriving while workers run is ignored", "[machine]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.machine.on_round(Harness::round(2));
  CHECK(h.workers.started.size() == 1);
  CHECK(h.machine.state() == State::kRunning);
}

TEST_CASE("new steps are reported at most once per interval, and once more before the answer",
          "[machine][progress]") {
  Harness h;  // progress_interval: the default 1 s
  h.machine.on_round(Harness::round(1));
  const std::size_t start = h.log.size();
  h.workers.beat(0, 1);
  h.workers.beat(0, 2);
  h.clock.advance(999ms);
  CHECK(h.log.size() == start);  // nothing before the interval
  h.workers.beat(1, 3);
  h.clock.advance(1ms);
  CHECK(h.since(start) == Log{"progress 1: 1@3"});
  h.clock.advance(5s);  // no new step, no report
  CHECK(h.log.size() == start + 1);
  h.workers.beat(1, 4);
  h.workers.done(Outcome::Kind::kFailed, 0, 1);  // the last steps go before the answer
  CHECK(h.since(start) == Log{"progress 1: 1@3", "progress 1: 1@4", "failure 1 x1"});
  CHECK(h.clock.pending() == 0);
}

TEST_CASE("no progress report follows the job's end", "[machine][progress]") {
  Harness h;
  h.machine.on_round(Harness::round(1));
  h.workers.beat(0, 1);
  CHECK(h.clock.pending() == 1);
  h.machine.on_job_finished(Harness::finished(3));  // e.g. another node's failure ended it
  h.clock.advance(5s);
  for (const std::string& line : h.log) CHECK(line.rfind("progress", 0) != 0);
}

}  // namespace
}  // namespace ddp::agent
