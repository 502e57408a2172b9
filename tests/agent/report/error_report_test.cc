#include "agent/report/error_report.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

using rendezvous::membership::Failure;

Failure failure(std::uint32_t rank, std::int32_t exit_code, std::int64_t seconds) {
  Failure f;
  f.node_key = "localhost";
  f.rank = rank;
  f.local_rank = rank;
  f.exit_code = exit_code;
  f.pid = 100 + rank;
  f.time = rendezvous::membership::WallTime(std::chrono::seconds(seconds));
  return f;
}

// Lines with their trailing blanks cut, blank lines dropped: torchrun's table leaves trailing
// blanks and a blank line around it.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
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

// torchrun's table, printed by PyTorch 2.14.1's ChildFailedError.format_msg() (Debian sid,
// TZ=UTC) for: rank 0 exit 3 without an error file, rank 1 exit 1 with an error file holding a
// py_callstack, rank 2 killed by SIGKILL; rank 1 the first observed.
constexpr const char* kTorchrunTable = R"(
============================================================
fail.py FAILED
------------------------------------------------------------
Failures:
[0]:
  time      : 2026-11-28_20:48:41
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 3 (pid: 100)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-11-28_20:48:41
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : -9 (pid: 102)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 102
------------------------------------------------------------
Root Cause (first observed failure):
[1]:
  time      : 2023-11-14_22:13:20
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 101)
  error_file: /tmp/gold/ef/1.json
  traceback : Traceback (most recent call last):
    File x
  ValueError: bad

============================================================
)";

TEST_CASE("the failure table is torchrun's, line for line", "[error_report]") {
  ::setenv("TZ", "UTC", 1);  // the table shows local time
  ::tzset();
  std::vector<Failure> fs{failure(2, -SIGKILL, 1795898921), failure(0, 3, 1795898921),
                          failure(1, 1, 1700000000)};
  fs[2].error_file = "/tmp/gold/ef/1.json";
  fs[2].message = "ValueError: bad";
  fs[2].traceback = "Traceback (most recent call last):\n  File x\nValueError: bad\n";
  CHECK(lines_of(format_failure_report("fail.py", fs, 2)) == lines_of(kTorchrunTable));
}

TEST_CASE(
    "failure table: the message when there is no traceback, and a narrower rule for short lines",
    "[error_report]") {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  Failure f = failure(5, 1, 0);
  f.node_key = "node-b:42";
  f.message = "worker died\nsecond line";
  const std::string t = format_failure_report("x", {f}, 0);
  CHECK_THAT(t, Catch::Contains("  <NO_OTHER_FAILURES>\n"));
  CHECK_THAT(t, Catch::Contains("  host      : node-b:42\n"));
  CHECK_THAT(t, Catch::Contains("  traceback : worker died\n  second line\n"));
  CHECK(t.substr(0, t.find('\n')) == std::string(33, '='));  // its longest line (time), at most 60
}

TEST_CASE("program name for the report", "[error_report]") {
  CHECK(program_name({"/usr/bin/python3", "-u", "/x/train.py", "--lr", "1"}, true) == "train.py");
  CHECK(program_name({"python3", "-u", "-m", "pkg.main"}, true) == "pkg.main");
  CHECK(program_name({"/opt/envs/py", "-u", "/x/train.py"}, true) == "train.py");
  CHECK(program_name({"/opt/bin/worker", "-v"}, false) == "worker");
}

}  // namespace
}  // namespace ddp::agent
