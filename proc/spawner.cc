#include "proc/spawner.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/posix/fork_and_forget_launcher.hpp>
#include <boost/process/v2/process.hpp>
#include <cerrno>
#include <cstring>

#include "proc/child_setup.h"
#include "proc/open_file_limit.h"
#include "proc/pipe_drain.h"
#include "proc/process_wait.h"
#include "proc/write_all.h"

namespace ddp::proc {

namespace asio = boost::asio;
namespace bp = boost::process::v2;
using boost::system::error_code;

struct Spawner::Child {
  int id = 0;
  pid_t pid = 0;
  bool exited = false;
  bool released = false;
  int stdin_fd = -1;   // this side of the stdin pipe; -1 when none or closed
  int report_fd = -1;  // carries the errno when its exec failed; EOF when it succeeded
  std::string program;
  std::unique_ptr<bp::basic_process_handle<>> process;  // its pidfd
  bp::native_exit_code_type wait_status = 0;            // where newer Boost puts the exit
  std::unique_ptr<asio::posix::stream_descriptor> out;
  std::unique_ptr<asio::posix::stream_descriptor> err;
  ~Child() {
    close_stdin();
    if (report_fd >= 0) ::close(report_fd);
  }
  void close_stdin() {
    if (stdin_fd >= 0) ::close(stdin_fd);
    stdin_fd = -1;
  }
  asio::posix::stream_descriptor* stream(StreamId s) {
    return s == StreamId::kStdout ? out.get() : err.get();
  }
};

namespace {

// At most this many bounded reads per stream when an exit is heard: far more than a pipe holds.
constexpr int kExitDrainRounds = 64;

// The Boost.Process initializer of a spawn: its exec-setup hook runs prepare_child in the child.
struct ChildSetupHook {
  ChildSetup setup;
  int report_fd = -1;  // close-on-exec: the parent reads EOF once the program runs

  template <typename Launcher>
  error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*&) const {
    const int err = prepare_child(setup);
    return err == 0 ? error_code{} : error_code(err, boost::system::system_category());
  }
  // After a failed exec (or setup): send the errno to the parent, then _exit(127) where
  // Boost.Process would call exit(), which runs this process's atexit handlers and flushes its
  // stdio buffers in the child. Variadic because Boost 1.81 detects this hook with other
  // arguments than it calls it with.
  template <typename... Args>
  void on_exec_error(Args&&...) const {
    const int err = errno;
    ssize_t ignored = ::write(report_fd, &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
};

// Every signal blocked in this thread for the object's life (the fork happens inside).
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// The descriptors of one spawn; closes whatever was not taken.
struct SpawnFds {
  int in[2] = {-1, -1};  // [0] the child's stdin (a pipe's read end or /dev/null)
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int report[2] = {-1, -1};  // the child's exec errno
  ~SpawnFds() {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], report[0], report[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  bool open(StdinMode stdin_mode) {
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::pipe2(report, O_CLOEXEC) != 0) {
      return false;
    }
    if (stdin_mode == StdinMode::kPipe) return ::pipe2(in, O_CLOEXEC) == 0;
    in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    return in[0] >= 0;
  }
  static int take(int& fd) { return std::exchange(fd, -1); }
};

// After the child's exec: its errno when it failed, else 0. Blocks until the exec happened
// or failed (the write end closes then); call once the write end here is closed.
int read_exec_errno(int report_fd) {
  int err = 0;
  ssize_t n = 0;
  do {
    n = ::read(report_fd, &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof err) ? err : 0;
}

// argv[0] as execvp finds it: on this process's PATH unless it holds a '/'. Empty: not found.
bp::filesystem::path resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  return bp::environment::find_executable(program);
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(s.c_str());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Spawner::Spawner(asio::io_context& io, ProcessObserver& observer, SpawnerOptions options)
    : io_(io), observer_(observer), options_(options), strays_(io) {
  if (options_.adopt_orphans && ::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    spdlog::warn("cannot become a child subreaper ({}); grandchildren may outlive workers",
                 std::strerror(errno));
  }
}

Spawner::~Spawner() {
  for (auto& [id, child] : children_) child->released = true;
}

Result<pid_t> Spawner::spawn(int id, const LaunchSpec& spec) {
  if (spec.argv.empty()) return invalid_argument("spawn: empty command");
  if (children_.contains(id)) return internal_error("spawn: id in use: " + std::to_string(id));
  const std::string& program = spec.argv.front();
  SpawnFds fds;
  if (!fds.open(spec.stdin_mode)) {
    return io_error("cannot run '" + program + "': cannot create pipes: " + std::strerror(errno));
  }
  ChildSetupHook hook{{spec.group, spec.die_with_parent, ::getpid(), fds.in[0], fds.out[1],
                       fds.err[1], children_open_file_limit(), spec.ignored_signal, 0},
                      fds.report[1]};
  cpu_set_t affinity;
  if (!spec.cpu_affinity.empty()) {
    CPU_ZERO(&affinity);
    for (int cpu : spec.cpu_affinity) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &affinity);
    }
    hook.setup.cpu_affinity = &affinity;
  }
  constexpr unsigned long kWordBits = 8 * sizeof(unsigned long);
  unsigned long memory_nodes[1024 / kWordBits] = {};  // MAX_NUMNODES of the largest kernels
  if (!spec.memory_nodes.empty()) {
    for (int node : spec.memory_nodes) {
      if (node >= 0 && node < 1024) memory_nodes[node / kWordBits] |= 1UL << (node % kWordBits);
    }
    hook.setup.memory_nodes = memory_nodes;
    hook.setup.memory_maxnode = 1024;
    hook.setup.several_memory_nodes = spec.memory_nodes.size() > 1;
  }
  bp::filesystem::path executable = resolve(program);
  if (executable.empty()) {
    executable = program;
    hook.setup.forced_errno = ENOENT;  // reported by the child, like any exec failure
  }
  std::vector<const char*> argv = c_strings(spec.argv);
  std::vector<const char*> envp = c_strings(spec.env);
  bp::posix::fork_and_forget_launcher launcher;
  if (!spec.inherit_env) launcher.env = envp.data();
  launcher.fd_whitelist.push_back(fds.report[1]);  // Boost.Process closes the others
  error_code fork_error;
  try {
    SignalsBlocked blocked;
    launcher(fork_context_.get_executor(), fork_error, executable, argv.data(), hook).detach();
  } catch (const boost::system::system_error& e) {
    // Only its pidfd on the fork context can fail once the child runs: wait below instead.
    spdlog::debug("spawn '{}': {}", program, e.what());
  }
  const pid_t pid = launcher.pid;
  if (pid <= 0) return io_error("cannot run '" + program + "': " + fork_error.message());
  ::close(SpawnFds::take(fds.report[1]));
  if (spec.exec_failure == ExecFailure::kError) {
    // Few children (the fan-out's): wait for the exec to know.
    if (const int err = read_exec_errno(fds.report[0]); err != 0) {
      strays_.adopt(pid);  // it is leaving with 127
      return io_error("cannot run '" + program + "': " + std::strerror(err));
    }
  }
  auto child = std::make_shared<Child>();
  child->id = id;
  child->pid = pid;
  child->program = program;
  child->report_fd = SpawnFds::take(fds.report[0]);
  try {
    child->process = std::make_unique<bp::basic_process_handle<>>(io_.get_executor(), pid);
  } catch (const boost::system::system_error& e) {
    ::kill(pid, SIGKILL);
    return io_error("cannot run '" + program + "': cannot wait for it: " + e.what());
  }
  child->stdin_fd = SpawnFds::take(fds.in[1]);
  child->out = std::make_unique<asio::posix::stream_descriptor>(io_, SpawnFds::take(fds.out[0]));
  child->err = std::make_unique<asio::posix::stream_descriptor>(io_, SpawnFds::take(fds.err[0]));
  child->out->non_blocking(true);
  child->err->non_blocking(true);
  children_[id] = child;
  if (options_.death_watch != nullptr) options_.death_watch->add_group(pid);
  wait_readable(child, StreamId::kStdout);
  wait_readable(child, StreamId::kStderr);
  wait_exit(child);
  return pid;
}

Status Spawner::write_stdin(int id, std::string_view bytes) {
  auto it = children_.find(id);
  if (it == children_.end() || it->second->stdin_fd < 0) return not_found("no stdin pipe");
  if (Status s = write_all(it->second->stdin_fd, bytes); !s) {
    return io_error("write to a child's stdin: " + s.message());
  }
  return Status::ok();
}

void Spawner::close_stdin(int id) {
  auto it = children_.find(id);
  if (it != children_.end()) it->second->close_stdin();
}

void Spawner::signal_group(int id, int signal) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  // The group may outlive its leader (grandchildren in it).
  const Child& child = *it->second;
  if (::kill(-child.pid, signal) == 0) return;
  if (errno == ESRCH && !child.exited) {
    // Not yet past setsid()/setpgid() in the child: no group yet. Signals are blocked there
    // until its handlers are reset, so the signal waits and then takes effect.
    if (::kill(child.pid, signal) == 0 || errno == ESRCH) return;
  }
  if (errno != ESRCH) {
    spdlog::warn("signal {} to process group {}: {}", signal, child.pid, std::strerror(errno));
  }
}

void Spawner::release(int id) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  auto& child = *it->second;
  child.released = true;
  child.close_stdin();
  error_code ignored;
  child.out->close(ignored);
  child.err->close(ignored);
  if (options_.death_watch != nullptr) options_.death_watch->remove_group(child.pid);
  children_.erase(it);
}

void Spawner::kill_strays() {
  const pid_t keep = options_.death_watch != nullptr ? options_.death_watch->pid() : 0;
  strays_.kill_all_except([&](pid_t pid) {
    if (pid == keep) return true;
    for (const auto& [id, child] : children_) {
      if (child->pid == pid) return true;
    }
    return false;
  });
}

void Spawner::wait_exit(const std::shared_ptr<Child>& child) {
  // The handle's wait ends with waitpid(pid): the one reap of this child.
  async_wait_exit(
      *child->process, child->wait_status, [this, child](error_code ec, int wait_status) {
        if (child->released) return;
        if (ec) {
          // Only if someone else reaped it (nothing here does): report it lost, never hang.
          spdlog::error("process {}: cannot wait for its exit: {}", child->pid, ec.message());
          wait_status = 255 << 8;
        }
        on_child_exit(child, wait_status);
      });
}

void Spawner::on_child_exit(const std::shared_ptr<Child>& child, int wait_status) {
  child->exited = true;
  child->close_stdin();
  if (child->report_fd >= 0) {
    if (const int err = read_exec_errno(child->report_fd); err != 0) {
      spdlog::error("cannot run '{}': {}", child->program, std::strerror(err));
    }
    ::close(std::exchange(child->report_fd, -1));
  }
  // Everything written before the exit is in the pipes now: deliver it first.
  for (StreamId s : {StreamId::kStdout, StreamId::kStderr}) {
    for (int round = 0; round < kExitDrainRounds && read_available(child, s); ++round) {
      // read_available returns true when it stopped at its bound or at EAGAIN: stop at EAGAIN.
      int avail = 0;
      if (::ioctl(child->stream(s)->native_handle(), FIONREAD, &avail) != 0 || avail == 0) break;
    }
  }
  if (!child->released) observer_.on_exit(child->id, ExitStatus::from_wait_status(wait_status));
}

void Spawner::wait_readable(const std::shared_ptr<Child>& child, StreamId stream) {
  child->stream(stream)->async_wait(asio::posix::stream_descriptor::wait_read,
                                    [this, child, stream](const error_code& ec) {
                                      if (ec || child->released) return;
                                      if (read_available(child, stream)) {
                                        wait_readable(child, stream);
                                      } else {
                                        observer_.on_output_end(child->id, stream);
                                      }
                                    });
}

bool Spawner::read_available(const std::shared_ptr<Child>& child, StreamId stream) {
  auto* d = child->stream(stream);
  if (child->released || !d->is_open()) return false;
  return drain_pipe(d->native_handle(), [&](std::string_view bytes) {
           observer_.on_output(child->id, stream, bytes);
           return !child->released;
         }) == PipeState::kOpen;
}

}  // namespace ddp::proc
