#include "ddp/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

namespace ddp {
namespace {

constexpr const char* kWorkerMarker = "DDP_SPAWN_WORKER";

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// This program's arguments, as the kernel has them.
Result<std::vector<std::string>> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) return io_error("cannot read /proc/self/cmdline");
  std::vector<std::string> argv;
  for (std::size_t start = 0; start < all.size();) {
    const std::size_t end = all.find('\0', start);
    argv.push_back(all.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (argv.empty()) return io_error("/proc/self/cmdline is empty");
  return argv;
}

std::vector<std::string> worker_environment(const SpawnOptions& o, const SpawnTopology& t,
                                            int local_rank, int port) {
  std::vector<std::string> env;
  const std::vector<std::string> ours = {"RANK",
                                         "LOCAL_RANK",
                                         "WORLD_SIZE",
                                         "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK",
                                         "MASTER_ADDR",
                                         "MASTER_PORT",
                                         "TORCHELASTIC_USE_AGENT_STORE",
                                         "TORCHELASTIC_RESTART_COUNT",
                                         kWorkerMarker};
  bool has_omp = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name == "OMP_NUM_THREADS") has_omp = true;
    if (std::find(ours.begin(), ours.end(), name) == ours.end()) env.push_back(entry);
  }
  auto set = [&](const std::string& name, const std::string& value) {
    env.push_back(name + "=" + value);
  };
  set("RANK", std::to_string(t.first_rank + local_rank));
  set("LOCAL_RANK", std::to_string(local_rank));
  set("WORLD_SIZE", std::to_string(t.world_size));
  set("LOCAL_WORLD_SIZE", std::to_string(o.nprocs));
  set("GROUP_RANK", std::to_string(o.node_rank));
  set("MASTER_ADDR", o.master_addr);
  set("MASTER_PORT", std::to_string(port));
  set("TORCHELASTIC_USE_AGENT_STORE", "True");
  set("TORCHELASTIC_RESTART_COUNT", "0");
  set(kWorkerMarker, "1");
  if (!has_omp && o.nprocs > 1) set("OMP_NUM_THREADS", "1");
  return env;
}

// In the forked child: only async-signal-safe calls from here to exec.
[[noreturn]] void exec_worker(pid_t parent, int devnull, const sigset_t& mask, const char* exe,
                              char* const* argv, char* const* envp) {
  ::setpgid(0, 0);  // own process group: the terminal's Ctrl-C reaches the parent only
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  ::dup2(devnull, 0);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::execve(exe, argv, envp);
  ::_exit(127);
}

struct Worker {
  int local_rank = 0;
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return std::string("was killed by signal ") + std::to_string(sig) + " (" + ::strsignal(sig) +
           ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

// Blocks the signals the parent waits for; restores the old mask when it goes.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, sig);
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() {
    // Drop what is still pending (SIGCHLD of reaped workers) before unblocking.
    timespec zero{};
    while (::sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  const sigset_t& set() const { return set_; }
  const sigset_t& old() const { return old_; }

 private:
  sigset_t set_;
  sigset_t old_;
};

class WorkerSet {
 public:
  explicit WorkerSet(const BlockedSignals& signals) : signals_(signals) {}
  ~WorkerSet() { stop(std::chrono::seconds(0)); }  // never leaves a worker behind
  WorkerSet(const WorkerSet&) = delete;
  WorkerSet& operator=(const WorkerSet&) = delete;

  Status start(const std::string& exe, const std::vector<std::string>& argv,
               const std::vector<std::string>& env, int local_rank, int rank) {
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) return io_error(os_error("cannot open /dev/null"));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0)
      exec_worker(parent, devnull, signals_.old(), exe.c_str(), args.data(), envp.data());
    ::close(devnull);
    if (pid < 0) return io_error(os_error("cannot start worker " + std::to_string(rank)));
    ::setpgid(pid, pid);  // also here: no race with a stop() right after fork
    workers_.push_back({local_rank, rank, pid, true});
    return Status::ok();
  }

  std::size_t running() const {
    return static_cast<std::size_t>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; }));
  }

  // Reaps what has exited, `first` (the pid the SIGCHLD named: the earliest exit) before the
  // others; the first failure is recorded in `outcome`.
  void reap(SpawnOutcome& outcome, pid_t first = 0) {
    std::stable_partition(workers_.begin(), workers_.end(),
                          [first](const Worker& w) { return w.pid == first; });
    for (Worker& w : workers_) {
      if (!w.running) continue;
      int status = 0;
      const pid_t got = ::waitpid(w.pid, &status, WNOHANG);
      if (got != w.pid) continue;
      w.running = false;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && outcome.failed_rank < 0 && !outcome.interrupted) {
        outcome.failed_rank = w.rank;
        outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        outcome.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
        outcome.message = "ddp::spawn: rank " + std::to_string(w.rank) + " (local rank " +
                          std::to_string(w.local_rank) + ", pid " + std::to_string(w.pid) + ") " +
                          describe_exit(status);
      }
    }
  }

  // One event: a child's exit or a signal to the parent; false when `deadline` passed first.
  bool wait_event(SpawnOutcome& outcome,
                  std::optional<std::chrono::steady_clock::time_point> deadline) {
    siginfo_t info;
    int sig;
    if (deadline) {
      auto left =
          std::max(std::chrono::nanoseconds(0), *deadline - std::chrono::steady_clock::now());
      timespec ts{static_cast<time_t>(left.count() / 1000000000),
                  static_cast<long>(left.count() % 1000000000)};
      sig = ::sigtimedwait(&signals_.set(), &info, &ts);
    } else {
      sig = ::sigwaitinfo(&signals_.set(), &info);
    }
    if (sig < 0) return errno == EINTR;  // EAGAIN: the deadline passed
    if (sig != SIGCHLD && !outcome.interrupted && outcome.failed_rank < 0) {
      outcome.interrupted = true;
      outcome.signal = sig;
      outcome.exit_code = 128 + sig;
      outcome.message = std::string("ddp::spawn: interrupted by signal ") + std::to_string(sig) +
                        " (" + ::strsignal(sig) + "); stopped the workers";
    }
    reap(outcome, sig == SIGCHLD ? info.si_pid : 0);
    return true;
  }

  // SIGTERM to every running worker's group, `grace`, then SIGKILL; reaps all.
  void stop(std::chrono::milliseconds grace) {
    SpawnOutcome ignored;
    ignored.interrupted = true;  // later exits are consequences, not failures
    signal_all(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (running() > 0 && grace.count() > 0 && wait_event(ignored, deadline)) {
    }
    signal_all(SIGKILL);
    for (Worker& w : workers_) {
      if (!w.running) continue;
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      w.running = false;
    }
  }

 private:
  void signal_all(int sig) {
    for (const Worker& w : workers_) {
      if (w.running) ::kill(-w.pid, sig);
    }
  }

  const BlockedSignals& signals_;
  std::vector<Worker> workers_;
};

}  // namespace

Result<SpawnTopology> spawn_topology(const SpawnOptions& o) {
  if (o.nprocs < 1)
    return invalid_argument("spawn: nprocs must be >= 1, not " + std::to_string(o.nprocs));
  if (o.nodes < 1)
    return invalid_argument("spawn: nodes must be >= 1, not " + std::to_string(o.nodes));
  if (o.node_rank < 0 || o.node_rank >= o.nodes) {
    return invalid_argument("spawn: node rank (--nr) " + std::to_string(o.node_rank) +
                            " is outside [0, " + std::to_string(o.nodes) + ")");
  }
  return SpawnTopology{o.nodes * o.nprocs, o.node_rank * o.nprocs};
}

bool is_spawned_worker() {
  const char* marker = std::getenv(kWorkerMarker);
  return marker != nullptr && std::string(marker) == "1";
}

Result<SpawnOutcome> run_spawned(const SpawnOptions& options) {
  auto topology = spawn_topology(options);
  if (!topology) return topology.status();
  if (options.nodes > 1 && options.master_port == 0) {
    return invalid_argument("spawn: several nodes need a fixed master port (--master-port)");
  }
  if (options.master_port < 0 || options.master_port > 65535) {
    return invalid_argument("spawn: master port " + std::to_string(options.master_port) +
                            " is outside [0, 65535]");
  }
  auto argv = own_argv();
  if (!argv) return argv.status();
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return io_error(os_error("cannot read /proc/self/exe"));
  exe[n] = '\0';

  // Before the store's threads exist, so they inherit the mask.
  BlockedSignals signals;
  c10::intrusive_ptr<c10d::TCPStore> store;
  int port = options.master_port;
  if (options.node_rank == 0) {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(options.master_port);
    store_options.isServer = true;
    store_options.waitWorkers = false;
    try {
      store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    } catch (const std::exception& e) {
      return io_error("spawn: cannot host the workers' store on port " +
                      std::to_string(options.master_port) + ": " + e.what());
    }
    port = store->getPort();
  }
  SpawnOutcome outcome;
  WorkerSet workers(signals);
  for (int local = 0; local < options.nprocs; ++local) {
    const int rank = topology->first_rank + local;
    Status started =
        workers.start(exe, *argv, worker_environment(options, *topology, local, port), local, rank);
    if (!started) return started;  // ~WorkerSet stops those already running
  }
  while (workers.running() > 0 && outcome.failed_rank < 0 && !outcome.interrupted) {
    workers.wait_event(outcome, std::nullopt);
  }
  if (workers.running() > 0) {
    workers.stop(options.grace);
    if (outcome.failed_rank >= 0) outcome.message += "; stopped the other workers";
  }
  return outcome;
}

int spawn(const SpawnOptions& options, const std::function<int()>& worker) {
  if (is_spawned_worker()) {
    ::unsetenv(kWorkerMarker);  // programs this worker starts are not spawned workers
    return worker();
  }
  auto outcome = run_spawned(options);
  if (!outcome) {
    std::fprintf(stderr, "ddp::spawn: %s\n", outcome.status().to_string().c_str());
    return 2;
  }
  if (!outcome->message.empty()) std::fprintf(stderr, "%s\n", outcome->message.c_str());
  return outcome->exit_code;
}

}  // namespace ddp
