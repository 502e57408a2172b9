#include "proc/death_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "proc/write_all.h"

namespace ddp::proc {
namespace {

// The pipe's records: an int32 process group (> 0: add, < 0: remove), or 0 then one of these
// kinds, a uint32 size and that many bytes.
constexpr char kMark = 'm';
constexpr char kWords = 'w';  // the last words' note; empty: none

bool read_exact(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// True when the process environment holds every "KEY=VALUE" of `marks`.
bool environ_has_all(pid_t pid, const std::vector<std::string>& marks) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  env.insert(env.begin(), '\0');
  for (const auto& m : marks) {
    if (env.find('\0' + m + '\0') == std::string::npos &&
        !(env.size() >= m.size() + 1 && env.ends_with('\0' + m))) {
      return false;
    }
  }
  return true;
}

// Processes that left the worker groups (setsid) but carry this job's environment.
void kill_marked(const std::vector<std::string>& marks) {
  if (marks.empty()) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid != ::getpid() && environ_has_all(pid, marks)) ::kill(pid, SIGKILL);
  }
}

// The watcher's whole life, in the forked child (single-threaded, so it may allocate).
[[noreturn]] void watcher_main(int read_fd, const DeathWatch::LastWords& last_words) {
  ::setpgid(0, 0);  // out of the agent's group: a kill of that group leaves the watcher
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
  ::syscall(SYS_close_range, 3U, static_cast<unsigned>(read_fd) - 1, 0U);
  ::syscall(SYS_close_range, static_cast<unsigned>(read_fd) + 1, ~0U, 0U);

  std::set<pid_t> groups;
  std::vector<std::string> marks;
  std::string note;
  std::int32_t record = 0;
  while (read_exact(read_fd, &record, sizeof record)) {  // false at EOF: the agent is gone
    if (record > 0) {
      groups.insert(record);
    } else if (record < 0) {
      groups.erase(-record);
    } else {
      char kind = 0;
      std::uint32_t size = 0;
      if (!read_exact(read_fd, &kind, 1) || !read_exact(read_fd, &size, sizeof size) ||
          size > 4096) {
        break;
      }
      std::string text(size, '\0');
      if (!read_exact(read_fd, text.data(), size)) break;
      if (kind == kMark) marks.push_back(std::move(text));
      if (kind == kWords) note = std::move(text);
    }
  }
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  kill_marked(marks);
  if (last_words && !note.empty()) last_words(note);
  ::_exit(0);
}

}  // namespace

Result<std::unique_ptr<DeathWatch>> DeathWatch::start(LastWords last_words) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return io_error(std::string("death watch: pipe failed: ") + std::strerror(errno));
  }
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
    watcher_main(fds[0], last_words);
  }
  ::close(fds[0]);
  // The watcher does the same itself; done here too, it holds once start() returns.
  ::setpgid(pid, pid);
  return std::unique_ptr<DeathWatch>(new DeathWatch(pid, fds[1]));
}

DeathWatch::~DeathWatch() { ::close(write_fd_); }

void DeathWatch::add_group(pid_t pgid) { send(pgid); }
void DeathWatch::remove_group(pid_t pgid) { send(-pgid); }

void DeathWatch::add_environment_mark(const std::string& key_value) { send_text(kMark, key_value); }
void DeathWatch::set_last_words(const std::string& note) { send_text(kWords, note); }
void DeathWatch::clear_last_words() { send_text(kWords, ""); }

void DeathWatch::send_text(char kind, const std::string& text) {
  std::string message(sizeof(std::int32_t) + 1 + sizeof(std::uint32_t), '\0');
  std::int32_t tag = 0;
  auto size = static_cast<std::uint32_t>(text.size());
  std::memcpy(message.data(), &tag, sizeof tag);
  message[sizeof tag] = kind;
  std::memcpy(message.data() + sizeof tag + 1, &size, sizeof size);
  // Small writes to a pipe are atomic; the watcher reads as fast as the agent spawns. A failed
  // write means the watcher is gone: nothing left to tell.
  (void)write_all(write_fd_, message + text);
}

void DeathWatch::send(std::int32_t record) {
  (void)write_all(write_fd_,
                  std::string_view(reinterpret_cast<const char*>(&record), sizeof record));
}

}  // namespace ddp::proc
