#include "agent/report/error_report.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

FailureRecord record(int local_rank, proc::ExitStatus status, double detected_s,
                     std::optional<ErrorFileInfo> error = std::nullopt) {
  FailureRecord r;
  r.failure.local_rank = local_rank;
  r.failure.pid = 4000 + local_rank;
  r.failure.status = status;
  r.failure.detected = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(detected_s)));
  r.global_rank = 10 + local_rank;
  r.error_file = "/logs/attempt_0/" + std::to_string(local_rank) + "/error.json";
  r.error = std::move(error);
  return r;
}

TEST_CASE("parses torch's @record error file", "[error_report]") {
  auto info = parse_error_file(R"({"message": {"message": "ValueError: boom",
      "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  x\nValueError: boom",
                    "timestamp": "1700000000"}}})");
  REQUIRE(info);
  CHECK(info->message == "ValueError: boom");
  CHECK(info->traceback.find("Traceback") == 0);
  REQUIRE(info->timestamp);
  CHECK(*info->timestamp == 1700000000.0);
}

TEST_CASE("parses the flat error file form", "[error_report]") {
  auto info = parse_error_file(R"({"message": "worker died", "timestamp": 1700000001.5})");
  REQUIRE(info);
  CHECK(info->message == "worker died");
  CHECK(info->traceback.empty());
  CHECK(*info->timestamp == 1700000001.5);
}

TEST_CASE("rejects malformed error files with a reason", "[error_report]") {
  CHECK(parse_error_file("{not json").status().message().find("not valid JSON") !=
        std::string::npos);
  CHECK(parse_error_file(R"({"msg": 1})").status().message().find("message") != std::string::npos);
  CHECK_FALSE(parse_error_file(R"({"message": 5})"));
}

TEST_CASE("read_error_file: missing file is nullopt, garbage is reported", "[error_report]") {
  CHECK_FALSE(read_error_file("/nonexistent/dir/error.json"));
  char path_template[] = "/tmp/ddp_error_file_XXXXXX";
  int fd = ::mkstemp(path_template);
  REQUIRE(fd >= 0);
  ::close(fd);
  const std::string path = path_template;
  std::ofstream(path) << "garbage";
  auto info = read_error_file(path);
  REQUIRE(info);
  CHECK(info->message.find("unreadable error file") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("read_error_file: whole seconds are refined by the file's write time in that second",
          "[error_report]") {
  char path_template[] = "/tmp/ddp_error_file_XXXXXX";
  int fd = ::mkstemp(path_template);
  REQUIRE(fd >= 0);
  ::close(fd);
  const std::string path = path_template;
  auto write = [&path](const std::string& timestamp, double written) {
    std::ofstream(path) << R"({"message": {"message": "E", "extraInfo": {"timestamp": ")"
                        << timestamp << R"("}}})";
    const auto at = std::chrono::sys_time<std::chrono::nanoseconds>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::duration<double>(written)));
    std::filesystem::last_write_time(path, std::chrono::file_clock::from_sys(at));
  };
  write("1700000000", 1700000000.25);
  CHECK(read_error_file(path)->timestamp == Approx(1700000000.25).epsilon(1e-12));
  write("1700000000", 1700000003.5);  // written in another second: the file's own time stands
  CHECK(read_error_file(path)->timestamp == 1700000000.0);
  write("1700000000.125", 1700000000.5);  // not whole seconds: kept
  CHECK(read_error_file(path)->timestamp == 1700000000.125);
  std::remove(path.c_str());
}

TEST_CASE("root cause is the smallest timestamp, error file before detection time",
          "[error_report]") {
  std::vector<FailureRecord> rs;
  rs.push_back(record(0, proc::ExitStatus::exited(1), 1000.5));
  rs.push_back(record(1, proc::ExitStatus::exited(3), 1000.9, ErrorFileInfo{"E", "", 999.0}));
  rs.push_back(record(2, proc::ExitStatus::killed(SIGKILL), 1000.1));
  CHECK(root_cause_index(rs) == 1);
  rs[1].error->timestamp.reset();
  CHECK(root_cause_index(rs) == 2);
}

TEST_CASE("ties go to the first observed failure", "[error_report]") {
  std::vector<FailureRecord> rs{record(0, proc::ExitStatus::exited(4), 5.0),
                                record(1, proc::ExitStatus::exited(5), 5.0)};
  CHECK(root_cause_index(rs) == 0);
}

TEST_CASE("report table shows root cause, others, messages and signals", "[error_report]") {
  ::setenv("TZ", "UTC", 1);  // the table shows local time
  ::tzset();
  std::vector<FailureRecord> rs;
  rs.push_back(record(0, proc::ExitStatus::killed(SIGKILL), 2000.0));
  rs.push_back(record(1, proc::ExitStatus::exited(3), 1000.0,
                      ErrorFileInfo{"RuntimeError: bad", "Traceback:\n  line 1", 1000.0}));
  std::string t = format_failure_report("train.py", "node7", rs, root_cause_index(rs));
  CHECK(t.find("train.py FAILED") != std::string::npos);
  auto root = t.find("Root Cause (first observed failure):");
  REQUIRE(root != std::string::npos);
  std::string head = t.substr(0, root), tail = t.substr(root);
  CHECK(tail.find("rank      : 11 (local_rank: 1)") != std::string::npos);
  CHECK(tail.find("exitcode  : 3 (pid: 4001)") != std::string::npos);
  CHECK(tail.find("RuntimeError: bad") != std::string::npos);
  CHECK(tail.find("Traceback:\n        line 1") != std::string::npos);
  CHECK(tail.find("host      : node7") != std::string::npos);
  CHECK(tail.find("time      : 1970-01-01_00:16:40") != std::string::npos);
  CHECK(head.find("exitcode  : 137 (pid: 4000) killed by SIGKILL") != std::string::npos);
  CHECK(head.find("Signal 9 (SIGKILL) received by PID 4000") != std::string::npos);
}

TEST_CASE("program name for the report", "[error_report]") {
  CHECK(program_name({"/usr/bin/python3", "-u", "/x/train.py", "--lr", "1"}, true) == "train.py");
  CHECK(program_name({"python3", "-u", "-m", "pkg.main"}, true) == "pkg.main");
  CHECK(program_name({"/opt/envs/py", "-u", "/x/train.py"}, true) == "train.py");
  CHECK(program_name({"/opt/bin/worker", "-v"}, false) == "worker");
}

}  // namespace
}  // namespace ddp::agent
