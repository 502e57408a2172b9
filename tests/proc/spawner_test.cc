// proc::Spawner against real processes (/bin/sh): output before exit, exit decoding, exec
// failures, stdin pipes, process groups, die-with-parent, orphans, no SIGCHLD handler, and
// the memory policy (--numa-binding).
// Every wait is the io_context run until a condition holds, with a deadline.
#include "proc/spawner.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "tests/catch.h"

namespace ddp::proc {
namespace {

using namespace std::chrono_literals;

struct Recorder final : ProcessObserver {
  std::map<int, std::string> out, err, out_at_exit;
  std::map<int, int> ends;
  std::map<int, ExitStatus> exits;
  void on_output(int id, StreamId s, std::string_view bytes) override {
    (s == StreamId::kStdout ? out : err)[id].append(bytes);
  }
  void on_output_end(int id, StreamId) override { ++ends[id]; }
  void on_exit(int id, ExitStatus status) override {
    exits[id] = status;
    out_at_exit[id] = out[id];
  }
};

// Runs `io` one handler at a time until `done()` or the deadline; returns done().
bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
               std::chrono::steady_clock::duration deadline = 20s) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return false;
    io.restart();
    io.run_one_for(end - now);
  }
  return true;
}

// Waits until process `pid` (any parent) has died: its pidfd turns readable. True if it did.
bool dies_within(pid_t pid, std::chrono::milliseconds deadline) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // gone already
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(deadline.count()));
  ::close(fd);
  return ready == 1;
}

LaunchSpec sh(const std::string& script) {
  return LaunchSpec{{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}};
}

struct Fixture {
  boost::asio::io_context io;
  Recorder rec;
  Spawner spawner{io, rec};
  bool exited(int id) {
    return run_until(io, [&] { return rec.exits.contains(id); });
  }
};

TEST_CASE_METHOD(Fixture, "spawner: output in order, all of it before the exit", "[spawner]") {
  auto pid = spawner.spawn(1, sh("i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done;"
                                 " echo oops >&2; exit 3"));
  REQUIRE(pid);
  CHECK(*pid > 0);
  REQUIRE(exited(1));
  CHECK(rec.exits[1] == ExitStatus::exited(3));
  std::string expected;
  for (int i = 0; i < 3000; ++i) expected += "line" + std::to_string(i) + "\n";
  CHECK(rec.out_at_exit[1] == expected);
  CHECK(rec.err[1] == "oops\n");
  REQUIRE(run_until(io, [&] { return rec.ends[1] == 2; }));
  spawner.release(1);
}

TEST_CASE_METHOD(Fixture, "spawner: exit codes and killing signals are decoded", "[spawner]") {
  REQUIRE(spawner.spawn(1, sh("exit 0")));
  REQUIRE(spawner.spawn(2, sh("kill -TERM $$")));
  REQUIRE(spawner.spawn(3, sh("exit 42")));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 3; }));
  CHECK(rec.exits[1].ok());
  CHECK(rec.exits[2] == ExitStatus::killed(SIGTERM));
  CHECK(rec.exits[3] == ExitStatus::exited(42));
}

TEST_CASE_METHOD(Fixture, "spawner: a memory policy prefers the given nodes", "[spawner]") {
  auto with_nodes = [](std::vector<int> nodes) {
    LaunchSpec s = sh("head -n 1 /proc/self/numa_maps | cut -d ' ' -f 2-3");
    s.memory_nodes = std::move(nodes);
    s.exec_failure = ExecFailure::kError;
    return s;
  };
  auto refused = spawner.spawn(9, with_nodes({1023}));  // no machine has node 1023
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.status().message(), Catch::Contains("cannot run '/bin/sh'"));
  if (!std::filesystem::exists("/proc/self/numa_maps")) {  // a kernel without NUMA: ENOSYS
    CHECK_FALSE(spawner.spawn(1, with_nodes({0})));
    return;
  }
  REQUIRE(spawner.spawn(1, with_nodes({0})));
  REQUIRE(spawner.spawn(2, with_nodes({0, 1})));  // node 1 dropped by the kernel if absent
  REQUIRE(spawner.spawn(3, with_nodes({})));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 3; }));
  CHECK(rec.out[1].starts_with("prefer:0 "));
  CHECK(rec.out[2].starts_with("prefer (many):0"));
  CHECK(rec.out[3].starts_with("default "));
}

TEST_CASE_METHOD(Fixture, "spawner: a program that cannot run exits 127 or fails spawn",
                 "[spawner]") {
  const std::string dir = std::filesystem::temp_directory_path() / "spawner_test_XXXXXX";
  std::string tmpl = dir;
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  const std::string bad = tmpl + "/bad_interpreter.sh";
  REQUIRE(std::system(
              ("printf '#!/nonexistent/interpreter\\n' > " + bad + "; chmod 755 " + bad).c_str()) ==
          0);
  // Workers (the default): the exit goes down the failure path as 127.
  REQUIRE(spawner.spawn(1, LaunchSpec{{"no-such-program-ddp"}, {"PATH=/usr/bin:/bin"}}));
  REQUIRE(spawner.spawn(2, LaunchSpec{{bad}, {}}));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 2; }));
  CHECK(rec.exits[1] == ExitStatus::exited(127));
  CHECK(rec.exits[2] == ExitStatus::exited(127));
  // ExecFailure::kError: spawn() says why, naming the program; nothing is reported later.
  LaunchSpec spec{{"no-such-program-ddp"}, {}};
  spec.exec_failure = ExecFailure::kError;
  auto missing = spawner.spawn(3, spec);
  REQUIRE_FALSE(missing);
  CHECK(missing.status().code() == ErrorCode::kIo);
  CHECK_THAT(missing.status().message(),
             Catch::Contains("cannot run 'no-such-program-ddp': No such file or directory"));
  spec.argv = {bad};
  auto interpreter = spawner.spawn(4, spec);
  REQUIRE_FALSE(interpreter);
  CHECK_THAT(interpreter.status().message(), Catch::Contains(bad));
  std::filesystem::remove_all(tmpl);
}

TEST_CASE_METHOD(Fixture, "spawner: a stdin pipe gives EOF at close_stdin", "[spawner]") {
  LaunchSpec spec = sh("echo ready; cat; echo eof");
  spec.stdin_mode = StdinMode::kPipe;
  REQUIRE(spawner.spawn(1, spec));
  REQUIRE(run_until(io, [&] { return rec.out[1] == "ready\n"; }));
  CHECK_FALSE(rec.exits.contains(1));  // cat waits on the open pipe
  spawner.close_stdin(1);
  spawner.close_stdin(1);  // idempotent
  REQUIRE(exited(1));
  CHECK(rec.exits[1].ok());
  CHECK(rec.out[1] == "ready\neof\n");
  // The default stdin is /dev/null: EOF at once.
  REQUIRE(spawner.spawn(2, sh("cat; echo done")));
  REQUIRE(exited(2));
  CHECK(rec.out[2] == "done\n");
}

TEST_CASE_METHOD(Fixture, "spawner: a group signal reaches a grandchild in the group",
                 "[spawner]") {
  auto mode = GENERATE(GroupMode::kNewSession, GroupMode::kNewGroup);
  LaunchSpec spec = sh("sleep 1000 & echo $!; wait");
  spec.group = mode;
  auto pid = spawner.spawn(1, spec);
  REQUIRE(pid);
  REQUIRE(run_until(io, [&] { return rec.out[1].find('\n') != std::string::npos; }));
  CHECK(::getpgid(*pid) == *pid);
  CHECK((::getsid(*pid) == *pid) == (mode == GroupMode::kNewSession));
  const pid_t grandchild = std::stoi(rec.out[1]);
  CHECK(::getpgid(grandchild) == *pid);
  spawner.signal_group(1, SIGTERM);
  REQUIRE(exited(1));
  CHECK(rec.exits[1] == ExitStatus::killed(SIGTERM));
  CHECK(dies_within(grandchild, 10s));
  spawner.signal_group(1, SIGTERM);  // a group that is gone is not an error
}

TEST_CASE_METHOD(Fixture, "spawner: a signal sent right after spawn() takes effect", "[spawner]") {
  // spawn() does not wait for the exec: the group may not exist yet, the signal still lands.
  for (int id = 1; id <= 8; ++id) {
    REQUIRE(spawner.spawn(id, sh("exec sleep 1000")));
    spawner.signal_group(id, SIGTERM);
  }
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 8; }));
  for (const auto& [id, status] : rec.exits) CHECK(status == ExitStatus::killed(SIGTERM));
}

TEST_CASE_METHOD(Fixture, "spawner: environment given or inherited, no other descriptors",
                 "[spawner]") {
  ::setenv("DDP_SPAWNER_TEST", "inherited", 1);
  LaunchSpec given = sh("echo \"[$DDP_SPAWNER_TEST][$FOO]\"");
  given.env.push_back("FOO=given");
  LaunchSpec inherit = given;
  inherit.inherit_env = true;
  REQUIRE(spawner.spawn(1, given));
  REQUIRE(spawner.spawn(2, inherit));
  // ls opens one directory itself (3); nothing else of this process is open in the child.
  REQUIRE(spawner.spawn(3, sh("ls /proc/self/fd | tr '\\n' ' '")));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 3; }));
  CHECK(rec.out[1] == "[][given]\n");
  CHECK(rec.out[2] == "[inherited][]\n");
  CHECK(rec.out[3] == "0 1 2 3 ");
  ::unsetenv("DDP_SPAWNER_TEST");
}

TEST_CASE_METHOD(Fixture, "spawner: children start with default signals and none blocked",
                 "[spawner]") {
  // This process ignores SIGUSR1 and blocks SIGUSR2; the child must not inherit either.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  ::sigaction(SIGUSR1, &ignore, &saved);
  sigset_t usr2, old_mask;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  ::pthread_sigmask(SIG_BLOCK, &usr2, &old_mask);
  REQUIRE(spawner.spawn(1, sh("grep -E '^Sig(Blk|Ign)' /proc/self/status")));
  REQUIRE(spawner.spawn(2, sh("kill -USR1 $$; echo survived")));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 2; }));
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGUSR1, &saved, nullptr);
  CHECK(rec.out[1] == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
  CHECK(rec.exits[2] == ExitStatus::killed(SIGUSR1));
}

TEST_CASE_METHOD(Fixture, "spawner: a child can start with one signal ignored", "[spawner]") {
  const int sig = SIGRTMIN + 3;  // the agent's stack signal
  const std::string script = "kill -s " + std::to_string(sig) + " $$; echo survived";
  LaunchSpec spared = sh(script);
  spared.ignored_signal = sig;
  REQUIRE(spawner.spawn(1, spared));
  REQUIRE(spawner.spawn(2, sh(script)));  // the default: the signal kills
  REQUIRE(spawner.spawn(3, [&] {
    LaunchSpec s = sh("grep -E '^SigIgn' /proc/self/status");
    s.ignored_signal = SIGUSR1;
    return s;
  }()));
  REQUIRE(run_until(io, [&] { return rec.exits.size() == 3; }));
  CHECK(rec.exits[1].ok());
  CHECK(rec.out[1] == "survived\n");
  CHECK(rec.exits[2] == ExitStatus::killed(sig));
  CHECK(rec.out[3] == "SigIgn:\t0000000000000200\n");  // SIGUSR1 (10) only
}

TEST_CASE_METHOD(Fixture, "spawner: exits are heard with no SIGCHLD handler", "[spawner]") {
  struct sigaction current {};
  ::sigaction(SIGCHLD, nullptr, &current);
  CHECK(current.sa_handler == SIG_DFL);
  REQUIRE(spawner.spawn(1, sh("exit 5")));
  REQUIRE(exited(1));
  CHECK(rec.exits[1] == ExitStatus::exited(5));
  ::sigaction(SIGCHLD, nullptr, &current);
  CHECK(current.sa_handler == SIG_DFL);
}

TEST_CASE("spawner: a child dies with its parent unless told otherwise", "[spawner]") {
  auto die_with_parent = GENERATE(true, false);
  int report[2];
  REQUIRE(::pipe(report) == 0);
  // The parent is a forked copy of this test that spawns `sleep`, reports its pid and exits.
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    boost::asio::io_context io;
    Recorder rec;
    Spawner spawner(io, rec);
    LaunchSpec spec = sh("exec sleep 1000");
    spec.die_with_parent = die_with_parent;
    auto pid = spawner.spawn(1, spec);
    const pid_t sent = pid ? *pid : -1;
    ssize_t ignored = ::write(report[1], &sent, sizeof sent);
    (void)ignored;
    ::_exit(0);
  }
  ::close(report[1]);
  pid_t sleeper = -1;
  REQUIRE(::read(report[0], &sleeper, sizeof sleeper) == static_cast<ssize_t>(sizeof sleeper));
  ::close(report[0]);
  REQUIRE(sleeper > 0);
  int status = 0;
  REQUIRE(::waitpid(parent, &status, 0) == parent);
  if (die_with_parent) {
    CHECK(dies_within(sleeper, 10s));
  } else {
    CHECK(::kill(sleeper, 0) == 0);  // still there after its parent was reaped
    ::kill(sleeper, SIGKILL);
    CHECK(dies_within(sleeper, 10s));
  }
}

TEST_CASE("spawner: kill_strays kills and reaps orphans, leaves live children", "[spawner]") {
  boost::asio::io_context io;
  Recorder rec;
  Spawner spawner(io, rec, {.death_watch = nullptr, .adopt_orphans = true});
  // The orphan leaves the child's group and session (setsid), so only kill_strays finds it.
  REQUIRE(spawner.spawn(1, sh("setsid sleep 1000 & echo $!")));
  REQUIRE(spawner.spawn(2, sh("exec sleep 1000")));
  REQUIRE(run_until(io, [&] { return rec.exits.contains(1); }));
  const pid_t orphan = std::stoi(rec.out[1]);
  const std::string proc_dir = "/proc/" + std::to_string(orphan);
  {
    std::ifstream stat(proc_dir + "/stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    CHECK(ppid == ::getpid());  // re-parented to the subreaper
  }
  spawner.kill_strays();
  // Killed and reaped: no zombie left behind.
  CHECK(run_until(io, [&] { return !std::filesystem::exists(proc_dir); }));
  CHECK_FALSE(rec.exits.contains(2));
  spawner.signal_group(2, SIGKILL);
  REQUIRE(run_until(io, [&] { return rec.exits.contains(2); }));
  CHECK(rec.exits[2] == ExitStatus::killed(SIGKILL));
}

}  // namespace
}  // namespace ddp::proc
