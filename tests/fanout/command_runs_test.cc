// Short commands run at once with a deadline (the ssh probes, pbsdsh --version): real
// processes; and the local address towards a host from the kernel's routing table.
#include "launcher/fanout/command_runs.h"

#include "launcher/fanout/local_address.h"
#include "tests/catch.h"

using namespace std::chrono_literals;

TEST_CASE("command runs: exit statuses, output of both streams, a missing program", "[fanout]") {
  auto runs = ddp::launcher::fanout::run_commands(
      {{"true"}, {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {"/nonexistent/prog"}}, 30s);
  REQUIRE(runs.size() == 3);
  REQUIRE(runs[0].exit);
  CHECK(runs[0].exit->ok());
  REQUIRE(runs[1].exit);
  CHECK(runs[1].exit->code == 3);
  CHECK_THAT(runs[1].output, Catch::Contains("out\n"));
  CHECK_THAT(runs[1].output, Catch::Contains("err\n"));
  CHECK_FALSE(runs[2].exit);
  CHECK_THAT(runs[2].output, Catch::Contains("/nonexistent/prog"));
}

TEST_CASE("command runs: a command past the deadline is killed and reported", "[fanout]") {
  auto start = std::chrono::steady_clock::now();
  auto runs = ddp::launcher::fanout::run_commands({{"sleep", "30"}, {"true"}}, 300ms);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(runs[0].timed_out);
  CHECK_FALSE(runs[0].exit);
  REQUIRE(runs[1].exit);
  CHECK(runs[1].exit->ok());
}

TEST_CASE("local address towards a host", "[fanout]") {
  auto loopback = ddp::launcher::fanout::local_address_towards("127.0.0.1");
  REQUIRE(loopback);
  CHECK(*loopback == "127.0.0.1");
  auto unknown = ddp::launcher::fanout::local_address_towards("no-such-host.invalid");
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.status().message(), Catch::Contains("no-such-host.invalid"));
}
