// The agent's state machine (agent/agent_machine.h) over fakes, logging into captured lines:
// the policy reports its events in the order they happen.
#include <csignal>
#include <nlohmann/json.hpp>
#include <optional>

#include "agent/agent_machine.h"
#include "agent/report/event_log.h"
#include "tests/agent/fake_mechanisms.h"
#include "tests/agent/report/event_log_fixture.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
using namespace event_log_fixture;
using nlohmann::json;

// The agent's state machine over fakes, logging into captured lines.
struct MachineRun {
  MachineRun()
      : backend(log),
        workers(log),
        report(log),
        events(std::make_unique<CaptureSink>(lines), origin(), [] { return kT0; }),
        machine(backend, workers, clock, report,
                {.finish_linger = 5s, .run_id = "job-7", .event_log = &events},
                [this](int code) { exit = code; }) {
    machine.start();
  }
  static Round round(std::uint64_t n, int restart_count) {
    Round r;
    r.round = n;
    r.restart_count = restart_count;
    return r;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& l : lines) out.push_back(json::parse(l)["event"]);
    return out;
  }
  json line(std::size_t i) const { return json::parse(lines.at(i)); }

  testing::Log log;
  testing::FakeBackend backend;
  testing::FakeWorkers workers;
  testing::FakeClock clock;
  testing::FakeReport report;
  std::vector<std::string> lines;
  EventLog events;
  std::optional<int> exit;
  AgentMachine machine;
};

// The policy reports its events in the order they happen: a failed first round, a restart, a
// successful second round, the job's end.
TEST_CASE("event log: the agent machine's events of a failure, a restart and a success",
          "[event_log]") {
  MachineRun run;
  run.machine.on_round(MachineRun::round(1, 0));
  run.workers.done(Outcome::Kind::kFailed, 0, 1);
  run.machine.on_round(MachineRun::round(2, 1));
  run.workers.done(Outcome::Kind::kSucceeded);
  run.machine.on_job_finished({0, {}, std::nullopt, {1500ms, 2000ms}});
  run.backend.drained();
  REQUIRE(run.exit == 0);
  CHECK(run.names() == std::vector<std::string>{"join", "round", "workers_done", "restart", "round",
                                                "workers_done", "finish"});
  json fin = run.line(run.lines.size() - 1);
  CHECK(fin["exit_code"] == 0);
  CHECK(fin["why"] == "job_finished");
  CHECK(fin["goodput"] == 0.75);  // the job's, as JobFinished told it
  CHECK(fin["stepping_seconds"] == 1.5);
  CHECK(fin["wall_seconds"] == 2.0);
  CHECK(fin["round"] == 2);
  CHECK(fin["restart_count"] == 1);
}

TEST_CASE("event log: the agent machine logs a job failure, a signal and a stop request",
          "[event_log]") {
  MachineRun run;
  run.machine.on_round(MachineRun::round(1, 0));
  run.machine.on_stop_workers(1, "rank 3 on node b failed", false);
  run.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  run.machine.on_job_finished({3, "", wire_failure(3), {}, false});
  run.machine.on_signal(SIGTERM);
  CHECK(run.names() == std::vector<std::string>{"join", "round", "stop_requested", "workers_done",
                                                "failure", "signal", "finish"});
  CHECK(run.line(2)["detail"] == "rank 3 on node b failed");
  CHECK(run.line(2)["stop_round"] == 1);
  CHECK(run.line(4)["root_cause"]["rank"] == 6);
  CHECK(run.line(6)["why"] == "signal");
  CHECK(run.line(6)["exit_code"] == 128 + SIGTERM);
  CHECK(run.exit == 128 + SIGTERM);
}

TEST_CASE("event log: the agent machine logs a lost node and a hang", "[event_log]") {
  MachineRun run;
  run.machine.on_round(MachineRun::round(1, 0));
  HangReport hang;
  hang.local_ranks = {0};
  hang.descriptions = {"rank 0 last beat at step 2 (1.0 s ago)"};
  run.machine.on_workers_hung(hang);
  run.machine.on_lost(peer_gone("removed by the rendezvous: missed heartbeats"));
  run.workers.done(Outcome::Kind::kInterrupted, SIGTERM);
  CHECK(run.names() == std::vector<std::string>{"join", "round", "workers_hung", "lost",
                                                "workers_done", "finish"});
  CHECK(run.line(3)["reason"] == "removed by the rendezvous: missed heartbeats");
  CHECK(run.line(5)["why"] == "lost");
  CHECK(run.line(5)["exit_code"] == 1);
}

}  // namespace
}  // namespace ddp::agent
