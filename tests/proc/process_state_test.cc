// proc::read_process_state against real processes: this one, a sleeping child, a zombie and
// a pid that is gone.
#include "proc/process_state.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/catch.h"

namespace ddp::proc {
namespace {

TEST_CASE("this process is running and names its parent", "[process_state]") {
  const auto self = read_process_state(::getpid());
  REQUIRE(self);
  CHECK(self->state == 'R');
  CHECK(self->ppid == ::getppid());
  CHECK(self->describe_state() == "R (running)");
}

TEST_CASE("a child blocked in a read sleeps, then is a zombie, then is gone", "[process_state]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char c;
    ::close(fds[1]);
    (void)::read(fds[0], &c, 1);  // blocks: nothing is ever written
    ::_exit(0);
  }
  ::close(fds[0]);
  // The child reaches its read soon; sleeping there is what it does until killed, so wait for
  // that state with a deadline (no event announces it).
  std::optional<ProcessState> state;
  for (int i = 0; i < 500 && !(state && state->state == 'S'); ++i) {
    state = read_process_state(child);
    ::usleep(2000);  // the sampling interval of this wait, not a guess at timing
  }
  REQUIRE(state);
  CHECK(state->state == 'S');
  CHECK(state->ppid == ::getpid());
  CHECK(state->describe_state() == "S (sleeping)");
  ::kill(child, SIGKILL);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, child, &info, WEXITED | WNOWAIT) == 0);  // a zombie now
  const auto zombie = read_process_state(child);
  REQUIRE(zombie);
  CHECK(zombie->describe_state() == "Z (zombie)");
  REQUIRE(::waitpid(child, nullptr, 0) == child);
  CHECK_FALSE(read_process_state(child));
  ::close(fds[1]);
}

}  // namespace
}  // namespace ddp::proc
