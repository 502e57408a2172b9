// Signal and exit-code names, as the root-cause table and every warning print them.
#include "common/signal_name.h"

#include <csignal>

#include "tests/catch.h"

namespace ddp {
namespace {

TEST_CASE("signal names", "[common]") {
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(200) == "SIG200");
}

TEST_CASE("exit codes read as the root-cause table prints them", "[common]") {
  CHECK(describe_exit_code(3) == "3");
  CHECK(describe_exit_code(0) == "0");
  CHECK(describe_exit_code(-SIGKILL) == "137 (killed by SIGKILL)");
  CHECK(describe_exit_code(-SIGSEGV) == "139 (killed by SIGSEGV)");
}

}  // namespace
}  // namespace ddp
