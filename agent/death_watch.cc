#include "agent/death_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ddp::agent {
namespace {

// The watcher's whole life. Runs in the forked child; only async-signal-safe calls plus
// a vector that was reserved before fork.
[[noreturn]] void watcher_main(int read_fd, std::vector<pid_t>& groups) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
  int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
  }
  // Keep only the pipe: sockets and worker pipes of the agent must not be held open here.
  for (int fd = 3; fd < 1024; ++fd) {
    if (fd != read_fd) ::close(fd);
  }
  int record = 0;
  for (;;) {
    ssize_t n = ::read(read_fd, &record, sizeof record);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof record)) break;  // EOF: the agent is gone
    if (record > 0) {
      if (groups.size() < groups.capacity()) groups.push_back(record);
    } else {
      for (auto& g : groups) {
        if (g == -record) g = 0;
      }
    }
  }
  for (pid_t g : groups) {
    if (g > 0) ::kill(-g, SIGKILL);
  }
  ::_exit(0);
}

}  // namespace

Result<std::unique_ptr<DeathWatch>> DeathWatch::start() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return io_error(std::string("death watch: pipe failed: ") + std::strerror(errno));
  }
  std::vector<pid_t> groups;
  groups.reserve(65536);
  // Blocked across fork so no handler of the agent runs in the watcher (see the launcher).
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return io_error(std::string("death watch: fork failed: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[1]);
    watcher_main(fds[0], groups);
  }
  ::close(fds[0]);
  return std::unique_ptr<DeathWatch>(new DeathWatch(pid, fds[1]));
}

DeathWatch::~DeathWatch() { ::close(write_fd_); }

void DeathWatch::add_group(pid_t pgid) { send(pgid); }
void DeathWatch::remove_group(pid_t pgid) { send(-pgid); }

void DeathWatch::send(int record) {
  // A 4-byte write to a pipe is atomic; the watcher reads as fast as the agent spawns.
  while (::write(write_fd_, &record, sizeof record) < 0 && errno == EINTR) {
  }
}

}  // namespace ddp::agent
