// proc::DeathWatch's last words against real processes: an "agent" (a forked child that holds
// the death watch) dies, and its watcher runs the last words with the note left last, also
// when the agent's whole process group is SIGKILLed; cleared words run nothing. Every wait is
// an event (a pipe, a pidfd) with a deadline.
#include "proc/death_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "tests/catch.h"

namespace ddp::proc {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// True when `fd` turns readable within the deadline.
bool readable_within(int fd, std::chrono::milliseconds deadline) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(deadline.count())) == 1;
}

// Waits until process `pid` (any parent) has died: its pidfd turns readable.
bool dies_within(pid_t pid, std::chrono::milliseconds deadline) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // gone already
  const bool died = readable_within(fd, deadline);
  ::close(fd);
  return died;
}

enum class Death { kSigkill, kGroupSigkill, kExit };

// Forks an agent in its own process group that starts a death watch whose last words write
// their note to `out`, lets `setup` tell the watch things, then waits to die as `death` says.
// Returns the file's text after the watcher exited ("" when it wrote none).
std::string last_words_after(Death death, const std::function<void(DeathWatch&)>& setup) {
  const fs::path out =
      fs::temp_directory_path() / ("ddp_death_watch_" + std::to_string(::getpid()) + ".txt");
  fs::remove(out);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t agent = ::fork();
  REQUIRE(agent >= 0);
  if (agent == 0) {
    ::setpgid(0, 0);
    ::close(ready[0]);
    auto watch = DeathWatch::start([out](const std::string& note) {
      std::ofstream(out.string() + ".tmp") << note;
      fs::rename(out.string() + ".tmp", out);
    });
    if (!watch) ::_exit(3);
    setup(**watch);
    const pid_t watcher = (*watch)->pid();
    if (::write(ready[1], &watcher, sizeof watcher) != sizeof watcher) ::_exit(4);
    if (death == Death::kExit) ::_exit(0);  // the watch's pipe closes with the process
    for (;;) ::pause();
  }
  ::close(ready[1]);
  pid_t watcher = 0;
  REQUIRE(readable_within(ready[0], 10s));
  REQUIRE(::read(ready[0], &watcher, sizeof watcher) == sizeof watcher);
  ::close(ready[0]);
  if (death == Death::kSigkill) ::kill(agent, SIGKILL);
  if (death == Death::kGroupSigkill) ::kill(-agent, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(agent, &status, 0) == agent);
  REQUIRE(dies_within(watcher, 10s));
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(out);
  return text;
}

TEST_CASE("death watch: the last words run with the last note when the agent dies",
          "[death_watch]") {
  auto set = [](DeathWatch& w) {
    w.set_last_words("lease 1");
    w.set_last_words("lease 7");  // the later note replaces the earlier
  };
  CHECK(last_words_after(Death::kSigkill, set) == "lease 7");
  // A kill of the agent's whole group: the watcher runs in a group of its own.
  CHECK(last_words_after(Death::kGroupSigkill, set) == "lease 7");
  CHECK(last_words_after(Death::kExit, set) == "lease 7");
}

TEST_CASE("death watch: cleared or never given last words run nothing", "[death_watch]") {
  auto cleared = [](DeathWatch& w) {
    w.set_last_words("lease 7");
    w.clear_last_words();
  };
  CHECK(last_words_after(Death::kSigkill, cleared).empty());
  CHECK(last_words_after(Death::kExit, [](DeathWatch&) {}).empty());
}

}  // namespace
}  // namespace ddp::proc
