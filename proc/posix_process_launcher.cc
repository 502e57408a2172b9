#include "proc/posix_process_launcher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "proc/pipe_drain.h"

namespace ddp::proc {

namespace asio = boost::asio;

struct PosixProcessLauncher::Child {
  int id = 0;
  pid_t pid = 0;
  bool exited = false;
  bool released = false;
  int report_fd = -1;  // carries errno when exec failed; EOF when it succeeded
  std::string program;
  ~Child() {
    if (report_fd >= 0) ::close(report_fd);
  }
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::unique_ptr<asio::posix::stream_descriptor> err;
  asio::posix::stream_descriptor* stream(StreamId s) {
    return s == StreamId::kStdout ? out.get() : err.get();
  }
};

namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// In the forked child: only async-signal-safe calls from here to exec.
[[noreturn]] void exec_child(pid_t parent, int devnull, int out_fd, int err_fd, int report_fd,
                             char* const* argv, char* const* envp) {
  ::setsid();  // own session and process group (pgid == pid)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the agent died before prctl took effect
  ::dup2(devnull, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  // The agent ignores SIGPIPE and Asio has handlers; exec resets caught signals but keeps
  // ignored ones and the mask, so restore the defaults, then unblock (spawn blocked all).
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Nothing else of the agent leaks into the worker (store sockets, other workers' pipes).
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execvpe(argv[0], argv, envp);
  int err = errno;
  ssize_t ignored = ::write(report_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

PosixProcessLauncher::PosixProcessLauncher(asio::io_context& io, ProcessObserver& observer,
                                           DeathWatch* death_watch)
    : io_(io), observer_(observer), death_watch_(death_watch), sigchld_(io, SIGCHLD) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    spdlog::warn("cannot become a child subreaper ({}); grandchildren may outlive workers",
                 std::strerror(errno));
  }
  wait_for_sigchld();
}

PosixProcessLauncher::~PosixProcessLauncher() {
  for (auto& [id, child] : children_) child->released = true;
}

Result<pid_t> PosixProcessLauncher::spawn(int id, const LaunchSpec& spec) {
  if (spec.argv.empty()) return invalid_argument("spawn: empty command");
  if (children_.contains(id)) return internal_error("spawn: id in use: " + std::to_string(id));
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int fd : {out[0], out[1], err[0], err[1], report[0], report[1], devnull}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (devnull < 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
    Status s = io_error(os_error("spawn '" + spec.argv[0] + "': cannot create pipes"));
    close_all();
    return s;
  }
  const pid_t parent = ::getpid();
  // Signals stay blocked across fork until the child has reset the handlers: a signal
  // caught by the child with the agent's (Asio's) handler would be written into the
  // agent's own signal pipe and look like a signal to the agent.
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  const pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) {
    Status s = io_error(os_error("cannot run '" + spec.argv[0] + "': fork failed"));
    close_all();
    return s;
  }
  if (pid == 0) exec_child(parent, devnull, out[1], err[1], report[1], argv.data(), envp.data());

  for (int* fd : {&out[1], &err[1], &report[1], &devnull}) {
    ::close(*fd);
    *fd = -1;
  }
  // Not waiting for the exec here lets a whole group start in parallel; an exec failure
  // is read from the report pipe when the child's exit (127) is reaped.
  auto child = std::make_shared<Child>();
  child->id = id;
  child->pid = pid;
  child->report_fd = report[0];
  child->program = spec.argv[0];
  child->out = std::make_unique<asio::posix::stream_descriptor>(io_, out[0]);
  child->err = std::make_unique<asio::posix::stream_descriptor>(io_, err[0]);
  child->out->non_blocking(true);
  child->err->non_blocking(true);
  children_[id] = child;
  if (death_watch_ != nullptr) death_watch_->add_group(pid);
  wait_readable(child, StreamId::kStdout);
  wait_readable(child, StreamId::kStderr);
  return pid;
}

void PosixProcessLauncher::signal_group(int id, int signal) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  const Child& child = *it->second;
  if (::kill(-child.pid, signal) == 0) return;
  if (errno == ESRCH && !child.exited) {
    // Not yet past setsid() in the child: the group does not exist. Signals are blocked
    // there until its handlers are reset, so the signal waits and then takes effect.
    if (::kill(child.pid, signal) == 0 || errno == ESRCH) return;
  }
  if (errno != ESRCH) {
    spdlog::warn("signal {} to process group {}: {}", signal, child.pid, std::strerror(errno));
  }
}

void PosixProcessLauncher::release(int id) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  auto& child = *it->second;
  child.released = true;
  boost::system::error_code ignored;
  child.out->close(ignored);
  child.err->close(ignored);
  if (death_watch_ != nullptr) death_watch_->remove_group(child.pid);
  children_.erase(it);
}

void PosixProcessLauncher::wait_readable(const std::shared_ptr<Child>& child, StreamId stream) {
  child->stream(stream)->async_wait(asio::posix::stream_descriptor::wait_read,
                                    [this, child, stream](const boost::system::error_code& ec) {
                                      if (ec || child->released) return;
                                      if (read_available(child, stream)) {
                                        wait_readable(child, stream);
                                      } else {
                                        observer_.on_output_end(child->id, stream);
                                      }
                                    });
}

bool PosixProcessLauncher::read_available(const std::shared_ptr<Child>& child, StreamId stream) {
  auto* d = child->stream(stream);
  if (!d->is_open()) return false;
  return drain_pipe(d->native_handle(), [&](std::string_view bytes) {
           observer_.on_output(child->id, stream, bytes);
           return !child->released;
         }) == PipeState::kOpen;
}

void PosixProcessLauncher::wait_for_sigchld() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    wait_for_sigchld();
  });
}

void PosixProcessLauncher::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;  // none left that exited (or no children at all)
    std::shared_ptr<Child> child;
    for (auto& [id, c] : children_) {
      if (c->pid == pid && !c->exited) child = c;
    }
    if (!child) continue;  // a re-parented grandchild or the death watch: reaped, done
    child->exited = true;
    int exec_errno = 0;
    if (::read(child->report_fd, &exec_errno, sizeof exec_errno) ==
        static_cast<ssize_t>(sizeof exec_errno)) {
      spdlog::error("worker {}: cannot run '{}': {}", child->id, child->program,
                    std::strerror(exec_errno));
    }
    // Everything written before the exit is in the pipes now: deliver it first.
    for (StreamId s : {StreamId::kStdout, StreamId::kStderr}) {
      while (!child->released && read_available(child, s)) {
        // read_available returns true when it stopped at its per-call bound or EAGAIN;
        // stop at EAGAIN (nothing more buffered).
        int avail = 0;
        if (::ioctl(child->stream(s)->native_handle(), FIONREAD, &avail) != 0 || avail == 0) {
          break;
        }
      }
    }
    if (!child->released) observer_.on_exit(child->id, ExitStatus::from_wait_status(status));
  }
}

void PosixProcessLauncher::kill_strays() {
  const pid_t keep = death_watch_ != nullptr ? death_watch_->pid() : 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    pid_t pid = 0;
    while (in >> pid) {
      if (pid == keep) continue;
      bool is_worker = false;
      for (auto& [id, c] : children_) is_worker = is_worker || (c->pid == pid && !c->exited);
      if (!is_worker) ::kill(pid, SIGKILL);
    }
  }
}

}  // namespace ddp::proc
