// HangWatch's step record (docs/progress.md, docs/goodput.md): beats written to real heartbeat
// FIFOs, what on_step reports and what step_report() sends the rendezvous.
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <string>

#include "agent/watch/hang_watch.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;

// Writes `line` to the FIFO at `path` as a worker does (non-blocking, one write).
void beat(const std::filesystem::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  ::close(fd);
}

TEST_CASE("new step values call on_step, and step_report has the stepping ranks and times",
          "[hang][progress]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddp_steps_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  boost::asio::io_context io;
  int steps = 0;
  HangWatch watch(
      io, HangLimits{}, 10, [](HangReport) {}, [&steps] { ++steps; });
  REQUIRE(watch.open_channel(0, dir / "beat-0"));
  REQUIRE(watch.open_channel(1, dir / "beat-1"));
  watch.start();
  // Runs the loop until `done()` (a 10 s deadline).
  auto until = [&io](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
    REQUIRE(done());
  };
  auto until_steps = [&](int n) { until([&] { return steps >= n; }); };

  beat(dir / "beat-0", "5\n");
  until_steps(1);
  beat(dir / "beat-1", "\n");  // a beat without a step: no step, rank 11 is not in the report
  beat(dir / "beat-0", "7\n");
  until_steps(2);
  until([&] { return watch.progress()[1].beats == 1; });
  CHECK(steps == 2);
  const auto report = watch.step_report(4);
  CHECK(report.round == 4);
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].rank == 10);
  CHECK(report.ranks[0].step == 7);
  // From step 5 to step 7: half the time between their first beats, and the stepping time is
  // the node's first step beat to its last one.
  CHECK(report.ranks[0].step_time > 0us);
  const auto twice =
      std::chrono::duration_cast<rendezvous::membership::Duration>(2 * report.ranks[0].step_time);
  CHECK(std::chrono::abs(twice - report.stepping) <= 1ms);
  std::filesystem::remove_all(dir);
}

TEST_CASE("stop() reads the beats a worker wrote just before it exited", "[hang][progress]") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ddp_steps_stop_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  boost::asio::io_context io;
  int steps = 0;
  HangWatch watch(
      io, HangLimits{}, 0, [](HangReport) {}, [&steps] { ++steps; });
  REQUIRE(watch.open_channel(0, dir / "beat-0"));
  watch.start();
  beat(dir / "beat-0", "41\n42\n");  // the loop never ran: nothing read yet
  CHECK(watch.step_report(1).ranks.empty());
  watch.stop();
  CHECK(steps == 2);
  REQUIRE(watch.step_report(1).ranks.size() == 1);
  CHECK(watch.step_report(1).ranks[0].step == 42);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::agent
