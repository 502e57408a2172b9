#include "agent/workers/supervisor.h"

#include <algorithm>
#include <csignal>
#include <optional>

#include "tests/agent/workers/fake_launcher.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using testing::FakeLauncher;
using namespace std::chrono_literals;

struct Harness {
  explicit Harness(int nproc, std::chrono::milliseconds grace = 10s)
      : Harness(SupervisorOptions{nproc, grace}) {}
  explicit Harness(SupervisorOptions options)
      : supervisor(
            io, launcher, options,
            [](int attempt, int r) {
              return proc::LaunchSpec{{"worker", std::to_string(attempt), std::to_string(r)}, {}};
            },
            [this](int attempt) {
              attempts.push_back(attempt);
              launcher.log.push_back("attempt " + std::to_string(attempt));
              return before_status;
            },
            [this](const Outcome& o) { outcome = o; }) {}

  // Runs the io_context until `done` holds or 5 s passed (a deadline, not a sleep).
  template <typename Pred>
  bool run_until(Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
    return done();
  }
  bool logged(const std::string& line) const {
    return std::find(launcher.log.begin(), launcher.log.end(), line) != launcher.log.end();
  }
  std::ptrdiff_t index_of(const std::string& line) const {
    return std::find(launcher.log.begin(), launcher.log.end(), line) - launcher.log.begin();
  }

  boost::asio::io_context io;
  FakeLauncher launcher;
  Status before_status;
  std::vector<int> attempts;
  std::optional<Outcome> outcome;
  Supervisor supervisor;
};

TEST_CASE("all workers exiting 0 succeeds and releases every worker", "[supervisor]") {
  Harness h(3);
  h.supervisor.start(0);
  CHECK(h.supervisor.phase() == Supervisor::Phase::kRunning);
  CHECK(h.launcher.live.size() == 3);
  for (int r = 0; r < 3; ++r) h.supervisor.on_exit(r, proc::ExitStatus::exited(0));
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kSucceeded);
  CHECK(h.launcher.live.empty());
  CHECK(h.launcher.specs.at(2).argv == std::vector<std::string>{"worker", "0", "2"});
}

TEST_CASE("a failure stops the others, tears the attempt down, and fails", "[supervisor]") {
  Harness h(3);
  h.supervisor.start(1);
  CHECK(h.launcher.specs.at(0).argv[1] == "1");  // the attempt given
  h.supervisor.on_exit(1, proc::ExitStatus::exited(3));
  CHECK(h.supervisor.phase() == Supervisor::Phase::kStopping);
  CHECK(h.logged("signal 0 15"));  // SIGTERM to the survivors' groups
  CHECK(h.logged("signal 2 15"));
  CHECK_FALSE(h.logged("signal 1 15"));  // not to the one that already exited
  CHECK_FALSE(h.outcome);
  h.supervisor.on_exit(2, proc::ExitStatus::killed(SIGSEGV));  // its own failure while stopping
  h.supervisor.on_exit(0, proc::ExitStatus::killed(SIGTERM));  // our death signal
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kFailed);
  REQUIRE(h.outcome->failures.size() == 2);
  CHECK(h.outcome->failures[0].local_rank == 1);
  CHECK(h.outcome->failures[0].status == proc::ExitStatus::exited(3));
  CHECK(h.outcome->failures[0].attempt == 1);
  CHECK(h.outcome->failures[1].status == proc::ExitStatus::killed(SIGSEGV));
  // Teardown: every group killed and released, then the strays.
  CHECK(h.index_of("release 2") < h.index_of("kill strays"));
  CHECK(h.launcher.live.empty());
  CHECK(h.attempts == std::vector<int>{1});  // no restart: that is the agent's decision
}

TEST_CASE("survivors that ignore the death signal are SIGKILLed after the grace", "[supervisor]") {
  Harness h(2, 20ms);
  h.supervisor.start(0);
  h.supervisor.on_exit(0, proc::ExitStatus::exited(1));
  CHECK(h.logged("signal 1 15"));
  CHECK_FALSE(h.logged("signal 1 9"));
  // Wait for the grace timer (a deadline, not a sleep): it must send SIGKILL.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!h.logged("signal 1 9") && std::chrono::steady_clock::now() < deadline) {
    h.io.run_one_for(100ms);
  }
  CHECK(h.logged("signal 1 9"));
  h.supervisor.on_exit(1, proc::ExitStatus::killed(SIGKILL));
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kFailed);
  REQUIRE(h.outcome->failures.size() == 1);  // the SIGKILL we sent is not a failure
  CHECK(h.outcome->failures[0].status.shell_code() == 1);
}

TEST_CASE("a signal is forwarded, ends the run without restart, and maps to 128+sig",
          "[supervisor]") {
  Harness h(2);
  h.supervisor.start(0);
  h.supervisor.interrupt(SIGTERM);
  CHECK(h.logged("signal 0 15"));
  CHECK(h.logged("signal 1 15"));
  h.supervisor.on_exit(0, proc::ExitStatus::killed(SIGTERM));
  h.supervisor.on_exit(1, proc::ExitStatus::exited(0));
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kInterrupted);
  CHECK(h.outcome->signal == SIGTERM);
  CHECK(h.attempts.size() == 1);
}

TEST_CASE("a signal during a failure stop ends it as interrupted and kill_now SIGKILLs",
          "[supervisor]") {
  Harness h(2);
  h.supervisor.start(0);
  h.supervisor.on_exit(0, proc::ExitStatus::exited(2));
  h.supervisor.interrupt(SIGINT);
  CHECK(h.logged("signal 1 2"));
  h.supervisor.kill_now();
  CHECK(h.logged("signal 1 9"));
  h.supervisor.on_exit(1, proc::ExitStatus::killed(SIGKILL));
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kInterrupted);
  CHECK(h.outcome->signal == SIGINT);
}

TEST_CASE("a spawn error stops the started workers and ends with the error", "[supervisor]") {
  Harness h(3);
  h.launcher.fail_spawn_of = 1;
  h.supervisor.start(0);
  CHECK(h.logged("signal 0 15"));
  h.supervisor.on_exit(0, proc::ExitStatus::killed(SIGTERM));
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kError);
  CHECK(h.outcome->error.message().find("nope") != std::string::npos);
}

TEST_CASE("a failing before-attempt hook ends the run before any spawn", "[supervisor]") {
  Harness h(2);
  h.before_status = io_error("cannot create log directory /x");
  h.supervisor.start(0);
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kError);
  CHECK(h.launcher.specs.empty());
}

// A worker SIGKILL cannot end (docs/unkillable.md): its exit never comes.
proc::ProcessState disk_sleep(pid_t) { return {'D', 1, "request_wait_answer"}; }

TEST_CASE("a worker that outlives SIGKILL is given up, named, and fails the group as stuck",
          "[supervisor]") {
  Harness h({.nproc = 2, .shutdown_timeout = 20ms, .kill_timeout = 200ms, .inspect = disk_sleep});
  h.supervisor.start(0);
  const pid_t stuck_pid = h.supervisor.pid(1);
  h.supervisor.on_exit(0, proc::ExitStatus::exited(1));
  const auto killed = [&] { return h.logged("signal 1 9"); };
  REQUIRE(h.run_until(killed));
  const auto sigkill_sent = std::chrono::steady_clock::now();
  CHECK_FALSE(h.outcome);  // still waiting for it, within the bound
  REQUIRE(h.run_until([&] { return h.outcome.has_value(); }));
  CHECK(std::chrono::steady_clock::now() - sigkill_sent >= 150ms);  // not before the bound
  CHECK(h.outcome->kind == Outcome::Kind::kFailed);
  REQUIRE(h.outcome->failures.size() == 2);
  CHECK_FALSE(h.outcome->failures[0].stuck);
  const WorkerFailure& f = h.outcome->failures[1];
  CHECK(f.local_rank == 1);
  CHECK(f.pid == stuck_pid);
  CHECK(f.status == proc::ExitStatus::killed(SIGKILL));
  REQUIRE(f.stuck);
  CHECK_THAT(*f.stuck, Catch::Contains("outlived SIGKILL by 0.") &&
                           Catch::Contains("pid " + std::to_string(stuck_pid) +
                                           ", state D (disk sleep), wait channel "
                                           "request_wait_answer"));
  CHECK(h.launcher.live.empty());  // released: a next attempt may use its id
}

TEST_CASE("a worker that never exits after a second Ctrl-C still ends the group", "[supervisor]") {
  Harness h({.nproc = 2, .kill_timeout = 30ms, .inspect = [](pid_t) {
               return std::optional<proc::ProcessState>();  // gone from /proc, exit unheard
             }});
  h.supervisor.start(0);
  h.supervisor.interrupt(SIGINT);
  h.supervisor.on_exit(0, proc::ExitStatus::killed(SIGINT));
  h.supervisor.kill_now();
  REQUIRE(h.run_until([&] { return h.outcome.has_value(); }));
  CHECK(h.outcome->kind == Outcome::Kind::kInterrupted);
  CHECK(h.outcome->signal == SIGINT);
}

TEST_CASE("a worker killed as hung that never exits is given up too", "[supervisor]") {
  Harness h({.nproc = 1, .kill_timeout = 30ms, .inspect = disk_sleep});
  h.supervisor.start(0);
  h.supervisor.mark_hung(0, HangNote{"hung: rank 0", "", {}, 124, true, 3});
  h.supervisor.kill(0);
  CHECK(h.logged("signal 0 9"));
  REQUIRE(h.run_until([&] { return h.outcome.has_value(); }));
  REQUIRE(h.outcome->failures.size() == 1);
  CHECK(h.outcome->failures[0].hang);
  CHECK(h.outcome->failures[0].stuck);
}

TEST_CASE("a worker exiting within the bound after SIGKILL is not stuck", "[supervisor]") {
  Harness h({.nproc = 2, .shutdown_timeout = 10ms, .kill_timeout = 10s, .inspect = disk_sleep});
  h.supervisor.start(0);
  h.supervisor.on_exit(0, proc::ExitStatus::exited(1));
  REQUIRE(h.run_until([&] { return h.logged("signal 1 9"); }));
  h.supervisor.on_exit(1, proc::ExitStatus::killed(SIGKILL));
  REQUIRE(h.outcome);
  REQUIRE(h.outcome->failures.size() == 1);
  CHECK_FALSE(h.outcome->failures[0].stuck);
}

TEST_CASE("a worker in uninterruptible sleep for the timeout fails the group as stuck",
          "[supervisor]") {
  // Rank 1 is in D state at every sample; rank 0 sleeps normally.
  Harness* self = nullptr;
  Harness h({.nproc = 2,
             .uninterruptible_timeout = 300ms,
             .inspect = [&self](pid_t pid) -> std::optional<proc::ProcessState> {
               const bool d = self != nullptr && pid == self->supervisor.pid(1);
               return proc::ProcessState{d ? 'D' : 'S', 1, d ? "nfs_wait_bit" : ""};
             }});
  self = &h;
  const auto started = std::chrono::steady_clock::now();
  h.supervisor.start(0);
  REQUIRE(h.run_until([&] { return h.supervisor.phase() == Supervisor::Phase::kStopping; }));
  CHECK(std::chrono::steady_clock::now() - started >= 300ms);
  CHECK(h.logged("signal 0 15"));
  CHECK(h.logged("signal 1 15"));
  h.supervisor.on_exit(0, proc::ExitStatus::killed(SIGTERM));
  h.supervisor.on_exit(1, proc::ExitStatus::killed(SIGTERM));  // it woke up and died
  REQUIRE(h.outcome);
  CHECK(h.outcome->kind == Outcome::Kind::kFailed);
  REQUIRE(h.outcome->failures.size() == 1);
  CHECK(h.outcome->failures[0].local_rank == 1);
  REQUIRE(h.outcome->failures[0].stuck);
  CHECK_THAT(*h.outcome->failures[0].stuck,
             Catch::Contains("in uninterruptible sleep for 0.") &&
                 Catch::Contains("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT") &&
                 Catch::Contains("wait channel nfs_wait_bit"));
}

TEST_CASE("a worker leaving D state before the timeout is left alone", "[supervisor]") {
  // D, D, S, D, D, ...: the dwell starts again after the S; with samples every 100 ms and a
  // 250 ms timeout, the second stretch judges it, never the first.
  int samples = 0;
  Harness h({.nproc = 1,
             .uninterruptible_timeout = 250ms,
             .inspect = [&samples](pid_t) -> std::optional<proc::ProcessState> {
               return proc::ProcessState{++samples == 3 ? 'S' : 'D', 1, ""};
             }});
  h.supervisor.start(0);
  REQUIRE(h.run_until([&] { return h.supervisor.phase() == Supervisor::Phase::kStopping; }));
  CHECK(samples >= 6);  // first stretch: samples 1-2; second: from sample 4, 250 ms later
}

TEST_CASE("exit status decoding and shell codes", "[supervisor]") {
  CHECK(proc::ExitStatus::from_wait_status(3 << 8) == proc::ExitStatus::exited(3));
  CHECK(proc::ExitStatus::from_wait_status(SIGKILL) == proc::ExitStatus::killed(SIGKILL));
  CHECK(proc::ExitStatus::killed(SIGKILL).shell_code() == 137);
  CHECK(proc::ExitStatus::exited(3).shell_code() == 3);
  CHECK(proc::ExitStatus::killed(SIGSEGV).describe() == "signal 11 (SIGSEGV)");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
}

}  // namespace
}  // namespace ddp::agent
