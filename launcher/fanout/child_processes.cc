#include "launcher/fanout/child_processes.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <cstring>

#include "proc/pipe_drain.h"

extern char** environ;

namespace ddp::launcher::fanout {

namespace asio = boost::asio;
using proc::StreamId;

struct ChildProcesses::Child {
  int id = 0;
  pid_t pid = 0;
  bool exited = false;
  bool released = false;
  int stdin_fd = -1;  // write end of the child's stdin pipe; -1 when none or closed
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::unique_ptr<asio::posix::stream_descriptor> err;
  ~Child() {
    if (stdin_fd >= 0) ::close(stdin_fd);
  }
  asio::posix::stream_descriptor* stream(proc::StreamId s) {
    return s == proc::StreamId::kStdout ? out.get() : err.get();
  }
};

ChildProcesses::ChildProcesses(asio::io_context& io, proc::ProcessObserver& observer)
    : io_(io), observer_(observer), sigchld_(io, SIGCHLD) {
  wait_for_sigchld();
}

ChildProcesses::~ChildProcesses() {
  for (auto& [id, child] : children_) child->released = true;
}

Result<pid_t> ChildProcesses::spawn(int id, const std::vector<std::string>& argv, bool stdin_pipe) {
  if (argv.empty()) return invalid_argument("spawn: empty command");
  if (children_.contains(id)) return internal_error("spawn: id in use: " + std::to_string(id));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
  };
  bool pipes = ::pipe2(out, O_CLOEXEC) == 0 && ::pipe2(err, O_CLOEXEC) == 0;
  if (pipes) {
    if (stdin_pipe) {
      pipes = ::pipe2(in, O_CLOEXEC) == 0;
    } else {
      in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      pipes = in[0] >= 0;
    }
  }
  if (!pipes) {
    Status s = io_error("cannot run " + argv[0] + ": cannot create pipes: " + std::strerror(errno));
    close_all();
    return s;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setflags(&attr, static_cast<short>(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                                     POSIX_SPAWN_SETSIGMASK));
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    Status s = io_error("cannot run " + argv[0] + ": " + std::strerror(rc));
    close_all();
    return s;
  }
  for (int* fd : {&in[0], &out[1], &err[1]}) {
    ::close(*fd);
    *fd = -1;
  }
  auto child = std::make_shared<Child>();
  child->id = id;
  child->pid = pid;
  child->stdin_fd = in[1];
  child->out = std::make_unique<asio::posix::stream_descriptor>(io_, out[0]);
  child->err = std::make_unique<asio::posix::stream_descriptor>(io_, err[0]);
  child->out->non_blocking(true);
  child->err->non_blocking(true);
  children_[id] = child;
  wait_readable(child, proc::StreamId::kStdout);
  wait_readable(child, proc::StreamId::kStderr);
  return pid;
}

void ChildProcesses::close_stdin(int id) {
  auto it = children_.find(id);
  if (it == children_.end() || it->second->stdin_fd < 0) return;
  ::close(it->second->stdin_fd);
  it->second->stdin_fd = -1;
}

void ChildProcesses::signal_group(int id, int signal) {
  auto it = children_.find(id);
  if (it == children_.end() || it->second->exited) return;
  // The group exists from the spawn on (POSIX_SPAWN_SETPGROUP happens before exec).
  if (::kill(-it->second->pid, signal) != 0 && errno == ESRCH) ::kill(it->second->pid, signal);
}

bool ChildProcesses::exited(int id) const {
  auto it = children_.find(id);
  return it == children_.end() || it->second->exited;
}

void ChildProcesses::wait_readable(const std::shared_ptr<Child>& child, proc::StreamId stream) {
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

bool ChildProcesses::read_available(const std::shared_ptr<Child>& child, proc::StreamId stream) {
  auto* d = child->stream(stream);
  if (!d->is_open()) return false;
  return proc::drain_pipe(d->native_handle(), [&](std::string_view bytes) {
           observer_.on_output(child->id, stream, bytes);
           return !child->released;
         }) == proc::PipeState::kOpen;
}

void ChildProcesses::wait_for_sigchld() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    wait_for_sigchld();
  });
}

void ChildProcesses::reap() {
  // Copy: on_exit may spawn or otherwise touch children_.
  std::vector<std::shared_ptr<Child>> live;
  for (auto& [id, child] : children_) {
    if (!child->exited) live.push_back(child);
  }
  for (auto& child : live) {
    int status = 0;
    pid_t pid = 0;
    do {
      pid = ::waitpid(child->pid, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid != child->pid) continue;
    child->exited = true;
    if (child->stdin_fd >= 0) {
      ::close(child->stdin_fd);
      child->stdin_fd = -1;
    }
    // What it wrote before exiting is in the pipes: deliver it before the exit (bounded).
    for (proc::StreamId s : {proc::StreamId::kStdout, proc::StreamId::kStderr}) {
      for (int i = 0; i < 64 && !child->released && read_available(child, s); ++i) {
      }
    }
    if (!child->released) observer_.on_exit(child->id, proc::ExitStatus::from_wait_status(status));
  }
}

}  // namespace ddp::launcher::fanout
