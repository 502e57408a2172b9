#include "agent/workers/supervisor.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <optional>

#include "tests/agent/workers/fake_launcher.h"

namespace ddp::agent {
namespace {

using testing::FakeLauncher;
using namespace std::chrono_literals;

struct Harness {
  explicit Harness(int nproc, std::chrono::milliseconds grace = 10s)
      : supervisor(
            io, launcher, SupervisorOptions{nproc, grace},
            [](int attempt, int r) {
              return proc::LaunchSpec{{"worker", std::to_string(attempt), std::to_string(r)}, {}};
            },
            [this](int attempt) {
              attempts.push_back(attempt);
              launcher.log.push_back("attempt " + std::to_string(attempt));
              return before_status;
            },
            [this](const Outcome& o) { outcome = o; }) {}

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
