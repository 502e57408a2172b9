#include "agent/report/failure_wire.h"

#include <csignal>
#include <fstream>

#include "agent/report/error_report.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

TEST_CASE("failure wire: local failures become the daemon's failures", "[failure_wire]") {
  RunSetup setup;
  setup.log_dir = std::filesystem::temp_directory_path() / "ddp_failure_wire_test";
  setup.group.global_rank_base = 4;
  std::filesystem::create_directories(setup.error_file(2, 1).parent_path());
  std::ofstream(setup.error_file(2, 1))
      << R"({"message": "worker died", "timestamp": 1700000001.5})";

  Outcome outcome;
  outcome.kind = Outcome::Kind::kFailed;
  auto seen = std::chrono::system_clock::time_point(std::chrono::seconds(1800000000));
  outcome.failures.push_back(
      {2, 1, 111, proc::ExitStatus::exited(3), seen, std::nullopt, std::nullopt});
  outcome.failures.push_back(
      {2, 0, 110, proc::ExitStatus::killed(SIGKILL), seen, std::nullopt, std::nullopt});
  auto wire = to_wire_failures(outcome, setup, 2);
  REQUIRE(wire.size() == 2);
  CHECK(wire[0].rank == 5);
  CHECK(wire[0].local_rank == 1);
  CHECK(wire[0].exit_code == 3);
  CHECK(wire[0].pid == 111);
  CHECK(wire[0].message == "worker died");
  CHECK(wire[0].error_file == setup.error_file(2, 1).string());
  CHECK(wire[0].time.time_since_epoch() == std::chrono::microseconds(1700000001500000));
  CHECK(wire[1].rank == 4);
  CHECK(wire[1].exit_code == -SIGKILL);
  CHECK(wire[1].error_file.empty());  // no error file written
  CHECK(wire[1].time.time_since_epoch() == std::chrono::seconds(1800000000));
  CHECK(wire[0].diagnosis.empty());  // no stack file; last lines are the caller's
  std::filesystem::remove_all(setup.log_dir);
}

TEST_CASE("failure wire: a stack file's head travels with the failure", "[failure_wire]") {
  RunSetup setup;
  setup.log_dir = std::filesystem::temp_directory_path() / "ddp_failure_wire_stack_test";
  const auto dir = setup.attempt_dir(0) / "1";
  std::filesystem::create_directories(dir);
  std::ofstream stack(dir / "stack.txt");
  for (int i = 0; i < 50; ++i) stack << "frame " << i << "\n";
  stack.close();
  Outcome outcome;
  outcome.kind = Outcome::Kind::kFailed;
  outcome.failures.push_back(
      {0, 1, 111, proc::ExitStatus::exited(124), {}, std::nullopt, std::nullopt});
  outcome.failures.push_back(
      {0, 0, 110, proc::ExitStatus::exited(1), {}, std::nullopt, std::nullopt});
  auto wire = to_wire_failures(outcome, setup, 0);
  REQUIRE(wire.size() == 2);
  REQUIRE(wire[0].diagnosis.stack_head.size() == rendezvous::membership::kDiagnosisLines);
  CHECK(wire[0].diagnosis.stack_head.front() == "frame 0");
  CHECK(wire[0].diagnosis.stack_head.back() == "frame 39");
  CHECK(wire[1].diagnosis.stack_head.empty());
  std::filesystem::remove_all(setup.log_dir);
}

TEST_CASE("failure wire: a stuck worker says so, must not be restarted, has no error file",
          "[failure_wire]") {
  RunSetup setup;
  setup.log_dir = std::filesystem::temp_directory_path() / "ddp_failure_wire_stuck_test";
  Outcome outcome;
  outcome.kind = Outcome::Kind::kFailed;
  const auto seen = std::chrono::system_clock::time_point(std::chrono::seconds(1800000000));
  WorkerFailure w{0, 1, 77, proc::ExitStatus::killed(SIGKILL), seen, std::nullopt, std::nullopt};
  w.stuck = "outlived SIGKILL by 30.0 s: pid 77, state D (disk sleep), wait channel x";
  outcome.failures.push_back(w);
  outcome.failures.push_back(
      {0, 0, 76, proc::ExitStatus::exited(1), seen, std::nullopt, std::nullopt});
  const auto wire = to_wire_failures(outcome, setup, 0);
  REQUIRE(wire.size() == 2);
  CHECK(wire[0].no_restart);
  CHECK(wire[0].message == "stuck: " + *w.stuck);
  CHECK(wire[0].error_file.empty());
  CHECK(wire[0].time.time_since_epoch() == std::chrono::seconds(1800000000));
  CHECK_FALSE(wire[1].no_restart);
  const std::string table = format_failure_report("train.py", {wire[0]}, 0);
  CHECK_THAT(table, Catch::Contains("error_file: <N/A>") &&
                        Catch::Contains("traceback : stuck: outlived SIGKILL"));
}

TEST_CASE("failure wire: a hung worker's note comes before its stack", "[failure_wire]") {
  RunSetup setup;
  setup.log_dir = std::filesystem::temp_directory_path() / "ddp_failure_wire_hang_test";
  Outcome outcome;
  outcome.kind = Outcome::Kind::kFailed;
  WorkerFailure w{0, 1, 77, proc::ExitStatus::exited(124), {}, std::nullopt, std::nullopt};
  w.hang = HangNote{"hung: rank 1 last beat at step 4",
                    "frame 0\nframe 1",
                    std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)),
                    124,
                    true,
                    4};
  outcome.failures.push_back(w);
  const auto wire = to_wire_failures(outcome, setup, 0);
  REQUIRE(wire.size() == 1);
  CHECK(wire[0].hung);
  CHECK(wire[0].step == 4);
  CHECK(wire[0].message == "hung: rank 1 last beat at step 4");
  CHECK(wire[0].traceback == "hung: rank 1 last beat at step 4\nframe 0\nframe 1");
  CHECK(wire[0].error_file == (setup.attempt_dir(0) / "1" / "stack.txt").string());
  CHECK(wire[0].time.time_since_epoch() == std::chrono::seconds(1700000000));
}

}  // namespace
}  // namespace ddp::agent
