#include "agent/workers/output.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/catch.h"

namespace ddp::agent {
namespace {

AgentConfig config_with(int nproc) {
  AgentConfig c;
  c.nproc_per_node = nproc;
  c.worker_argv = {"w"};
  return c;
}

TEST_CASE("routing follows -r, -t and --local-ranks-filter", "[output]") {
  AgentConfig c = config_with(3);
  CHECK(route_for(c, false, 0, proc::StreamId::kStdout) == StreamRoute{true, false});
  CHECK(route_for(c, true, 0, proc::StreamId::kStderr) == StreamRoute{true, true});
  c.redirects.all = Streams::kStdout;
  c.tee.per_rank[1] = Streams::kBoth;
  CHECK(route_for(c, false, 0, proc::StreamId::kStdout) == StreamRoute{false, true});
  CHECK(route_for(c, false, 0, proc::StreamId::kStderr) == StreamRoute{true, false});
  CHECK(route_for(c, false, 1, proc::StreamId::kStdout) == StreamRoute{true, true});
  CHECK(route_for(c, false, 1, proc::StreamId::kStderr) == StreamRoute{true, true});
  c.local_ranks_filter = std::set<int>{0};
  CHECK(route_for(c, false, 1, proc::StreamId::kStdout) == StreamRoute{false, true});
  CHECK(route_for(c, false, 2, proc::StreamId::kStderr) == StreamRoute{false, false});
  CHECK(output_prefix("default", 0) == "[default0]:");
  CHECK(output_prefix("trainer", 12) == "[trainer12]:");
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST_CASE("router prefixes whole console lines and writes raw files", "[output]") {
  auto dir =
      std::filesystem::temp_directory_path() / ("ddp_output_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  int out[2], err[2];
  REQUIRE(::pipe(out) == 0);
  REQUIRE(::pipe(err) == 0);
  AgentConfig c = config_with(2);
  c.tee.all = Streams::kStdout;
  {
    OutputRouter router(c, false, out[1], err[1]);
    REQUIRE(router.begin_attempt(dir / "attempt_0"));
    router.write(0, proc::StreamId::kStdout, "a1\npart");
    router.write(1, proc::StreamId::kStderr, "e1\n");
    router.write(0, proc::StreamId::kStdout, "ial\ntail");
    router.end_stream(0, proc::StreamId::kStdout);
    router.end_attempt();
  }
  ::close(out[1]);
  ::close(err[1]);
  CHECK(drain(out[0]) == "[default0]:a1\n[default0]:partial\n[default0]:tail\n");
  CHECK(drain(err[0]) == "[default1]:e1\n");
  CHECK(slurp(dir / "attempt_0" / "0" / "stdout.log") == "a1\npartial\ntail");
  CHECK_FALSE(std::filesystem::exists(dir / "attempt_0" / "1" / "stderr.log"));
  CHECK(std::filesystem::is_directory(dir / "attempt_0" / "1"));
  ::close(out[0]);
  ::close(err[0]);
  std::filesystem::remove_all(dir);
}

TEST_CASE("router keeps each worker's last lines, whatever the routing", "[output]") {
  auto dir =
      std::filesystem::temp_directory_path() / ("ddp_output_tail_" + std::to_string(::getpid()));
  int out[2];
  REQUIRE(::pipe(out) == 0);
  AgentConfig c = config_with(2);
  c.redirects.per_rank[1] = Streams::kBoth;  // rank 1 goes to files only
  OutputRouter router(c, false, out[1], out[1]);
  REQUIRE(router.begin_attempt(dir / "attempt_0"));
  for (int i = 0; i < 50; ++i) {
    router.write(0, proc::StreamId::kStdout, "out " + std::to_string(i) + "\n");
  }
  router.write(0, proc::StreamId::kStderr, "Traceback\nValueError: bad");  // no final newline
  router.write(1, proc::StreamId::kStderr, "hidden\n");
  router.end_attempt();
  auto lines = router.last_lines(0);
  REQUIRE(lines.size() == rendezvous::membership::kDiagnosisLines);
  CHECK(lines[0] == "out 12");
  CHECK(lines[37] == "out 49");
  CHECK(lines[38] == "Traceback");
  CHECK(lines[39] == "ValueError: bad");
  CHECK(router.last_lines(1) == std::vector<std::string>{"hidden"});
  CHECK(router.last_lines(2).empty());
  REQUIRE(router.begin_attempt(dir / "attempt_1"));  // a new attempt starts empty
  CHECK(router.last_lines(0).empty());
  router.end_attempt();
  ::close(out[1]);
  ::close(out[0]);
  std::filesystem::remove_all(dir);
}

TEST_CASE("prefix templates expand torchrun's macros once per worker", "[output]") {
  CHECK(output_prefix("", "trainer", 2, 7, "h1") == "[trainer2]:");
  CHECK(output_prefix("[${role_name}${local_rank}|${rank}@${hostname}] ", "t", 2, 7, "h1") ==
        "[t2|7@h1] ");
  CHECK(output_prefix("$rank:$$ ${nope} $nope ${ rank} $", "t", 0, 3, "h") ==
        "3:$ ${nope} $nope ${ rank} $");
}

TEST_CASE("duplicate filters copy matching teed lines, prefixed, into one file", "[output]") {
  auto dir =
      std::filesystem::temp_directory_path() / ("ddp_filter_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  int out[2], err[2];
  REQUIRE(::pipe(out) == 0);
  REQUIRE(::pipe(err) == 0);
  AgentConfig c = config_with(3);
  c.tee.per_rank = {{0, Streams::kBoth}, {1, Streams::kStdout}};  // rank 2 is not teed
  c.duplicate_stdout_filters = {"loss", "acc"};
  c.duplicate_stderr_filters = {"Warn"};
  c.log_line_prefix_template = "<${rank}> ";
  {
    OutputRouter router(c, false, out[1], err[1]);
    REQUIRE(router.begin_attempt(dir / "attempt_1", 10));
    router.write(0, proc::StreamId::kStdout, "loss 1\nstep\n");
    router.write(1, proc::StreamId::kStdout, "acc 2\n");
    router.write(2, proc::StreamId::kStdout, "loss 3\n");
    router.write(0, proc::StreamId::kStderr, "Warning x\nother\n");
    router.write(1, proc::StreamId::kStderr, "Warning y\n");  // stderr of rank 1 not teed
    router.write(1, proc::StreamId::kStdout, "last acc");     // no newline: flushed at the end
    router.end_attempt();
  }
  ::close(out[1]);
  ::close(err[1]);
  CHECK(slurp(dir / "attempt_1" / "filtered_stdout.log") ==
        "<10> loss 1\n<11> acc 2\n<11> last acc\n");
  CHECK(slurp(dir / "attempt_1" / "filtered_stderr.log") == "<10> Warning x\n");
  CHECK(drain(out[0]) == "<10> loss 1\n<10> step\n<11> acc 2\n<12> loss 3\n<11> last acc\n");
  CHECK(drain(err[0]) == "<10> Warning x\n<10> other\n<11> Warning y\n");
  ::close(out[0]);
  ::close(err[0]);
  std::filesystem::remove_all(dir);
}

TEST_CASE("router reports an unwritable log directory", "[output]") {
  AgentConfig c = config_with(1);
  OutputRouter router(c, true, -1, -1);
  Status s = router.begin_attempt("/proc/nope/attempt_0");
  CHECK_FALSE(s);
  CHECK(s.message().find("/proc/nope/attempt_0/0") != std::string::npos);
}

}  // namespace
}  // namespace ddp::agent
