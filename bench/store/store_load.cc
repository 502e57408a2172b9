// Store load generator: LibTorch 1.13 c10d::TCPStore clients against any TCPStore server.
//
//   store_load ops     --host H --port P --clients N [--seconds S] [--server-pid PID]
// --host may list several addresses of the same server (H1,H2,...): client i uses the
// (i mod count)-th. On loopback, 127.0.0.1,127.0.0.2,... give each address its own ephemeral
// port space: ~20,000 connections to one address exhaust Linux's preferred (even) ephemeral
// ports and every further connect() searches the range, which the clients would pay, not the
// server (10,000 real clients come from many hosts).
//   store_load barrier --host H --port P --clients N [--server-pid PID]
//                      [--clients-per-process K]   (default 1000, at most 4000)
//
// ops: N threads, each with its own client, loop set/get/add on their own keys for S seconds
// (clock starts once all N are connected). Prints
//   "ops clients=N ops=X seconds=T ops_per_s=R server_cpu_us_per_op=U"
// where U is the server's CPU time (with --server-pid) over the window divided by the ops.
// barrier: N clients each ADD 1 to a counter; the one that reads N SETs a key, all WAIT on it.
// Prints
//   "barrier clients=N procs=K connect_s=C barrier_s=B total_s=T rss_kb=R hwm_kb=H
//    server_cpu_connect_s=X server_cpu_barrier_s=Y client_cpu_connect_s=U client_cpu_barrier_s=V"
// The clients are spread over child processes of at most K clients (RLIMIT_NOFILE is per
// process; each 1.13 client holds two sockets); the parent times them through pipes. Before the
// clock starts, every child exists and has one parked thread per client (the ADD and the WAIT
// block) plus warm stacks for c10d's callback threads: making threads is the load generator's
// cost; a job's clients each start on their own host. connect_s runs from the start signal
// until every client is constructed (each child constructs, that is connects, its clients one
// after another: 1.13's constructor opens two connections and starts a thread), barrier_s from
// releasing the N connected clients to the last WAIT returning, total_s is both. A connect()
// returns once the kernel has queued the connection in the server's listen backlog, accepted or
// not (a 1.13 constructor sends nothing), so for a server that accepts slower than the clients
// connect, the accepts left in its backlog fall in barrier_s; total_s is the figure to compare.
// rss/hwm are the server's VmRSS/VmHWM (from /proc/PID/status) read while all N clients (2N
// connections) are still open; server_cpu_* is the server's user plus system CPU time in each
// phase, client_cpu_* the children's (their clients, c10d's threads, the kernel work done in
// their system calls) from the start signal to the last of their clients connected, and from
// there to their last WAIT returned: who is the bottleneck, the server or the clients.
// Exits 1 with a message on any client error.
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "bench/store/proc_stats.h"

namespace {

using ddp::bench::cpu_seconds;
using ddp::bench::self_cpu_seconds;
using ddp::bench::status_kb;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// 10,000 clients mean 20,000 threads here (one per client, one c10d callback thread each):
// keep stacks small.
constexpr size_t kThreadStack = 256 * 1024;
constexpr auto kClientTimeout = std::chrono::milliseconds(600s);

struct Options {
  std::string mode;
  std::vector<std::string> hosts;  // --host, split at commas
  uint16_t port = 0;
  int clients = 1;
  double seconds = 3.0;
  long server_pid = 0;
  int clients_per_process = 1000;  // barrier: clients per child process
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "store_load: %s\nusage: store_load ops|barrier --host H --port P --clients N "
               "[--seconds S] [--server-pid PID] [--clients-per-process K]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  if (argc < 2) usage("missing mode");
  Options o;
  o.mode = argv[1];
  if (o.mode != "ops" && o.mode != "barrier") usage("unknown mode '" + o.mode + "'");
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--host") {
      for (std::string::size_type start = 0;;) {
        const auto comma = value.find(',', start);
        o.hosts.push_back(value.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--port")
      o.port = static_cast<uint16_t>(std::stoi(value));
    else if (flag == "--clients")
      o.clients = std::stoi(value);
    else if (flag == "--seconds")
      o.seconds = std::stod(value);
    else if (flag == "--server-pid")
      o.server_pid = std::stol(value);
    else if (flag == "--clients-per-process")
      o.clients_per_process = std::stoi(value);
    else
      usage("unknown flag '" + flag + "'");
  }
  if (argc % 2 != 0) usage("every flag needs a value");
  const bool empty_host =
      o.hosts.empty() ||
      std::any_of(o.hosts.begin(), o.hosts.end(), [](const std::string& h) { return h.empty(); });
  if (empty_host || o.port == 0 || o.clients < 1) usage("--host, --port, --clients > 0");
  if (o.clients_per_process < 1 || o.clients_per_process > 4000)
    usage("--clients-per-process must be 1..4000 (two sockets per 1.13 client)");
  return o;
}

// Client `index` connects to the index-th address of --host (cycled).
std::unique_ptr<c10d::TCPStore> connect(const Options& o, int index) {
  c10d::TCPStoreOptions opts;
  opts.port = o.port;
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = kClientTimeout;
#if TORCH_VERSION_MAJOR >= 2
  opts.useLibUV = false;  // nothing changes on the wire; Debian's 2.6 and 2.14 refuse true
#endif
  return std::make_unique<c10d::TCPStore>(o.hosts[static_cast<std::size_t>(index) % o.hosts.size()],
                                          opts);
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A one-shot gate threads block on without spinning (std::latch and std::atomic::wait spin and
// sched_yield first, which with thousands of waiting threads costs the clients real CPU time in
// the measured window).
class Gate {
 public:
  void wait() {
    while (open_.load(std::memory_order_acquire) == 0) futex(FUTEX_WAIT_PRIVATE, 0);
  }
  void open() {
    open_.store(1, std::memory_order_release);
    futex(FUTEX_WAKE_PRIVATE, std::numeric_limits<int>::max());
  }

 private:
  void futex(int op, int value) {
    ::syscall(SYS_futex, reinterpret_cast<int*>(&open_), op, value, nullptr, nullptr, 0);
  }
  std::atomic<int> open_{0};
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
};

// Counts down from n; the thread that reaches zero opens `done`.
class Countdown {
 public:
  explicit Countdown(int n) : left_(n) {}
  void arrive() {
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.open();
  }
  void wait() { done_.wait(); }

 private:
  std::atomic<int> left_;
  Gate done_;
};

// Runs body(i) on n threads and joins them; the first exception message is kept in *error.
template <typename Body>
void run_threads(int n, Body body, std::optional<std::string>* error, std::atomic<bool>* failed) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  std::mutex error_mu;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([i, &body, &error_mu, error, failed] {
      try {
        body(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!*error) *error = e.what();
        failed->store(true);
      }
    });
  }
  for (auto& t : threads) t.join();
}

int run_ops(const Options& o) {
  Countdown connected(o.clients);
  Gate go;
  std::atomic<bool> stop{false}, failed{false};
  std::atomic<long> total_ops{0};
  std::optional<std::string> error;
  Clock::time_point start, end;
  double cpu_start = 0, cpu_end = 0;
  std::thread timer([&] {
    connected.wait();
    if (o.server_pid > 0) cpu_start = cpu_seconds(o.server_pid);
    start = Clock::now();
    go.open();
    // The sleep is the measurement window itself.
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop = true;
    if (o.server_pid > 0) cpu_end = cpu_seconds(o.server_pid);
  });
  run_threads(
      o.clients,
      [&](int i) {
        std::unique_ptr<c10d::TCPStore> store;
        try {
          store = connect(o, i);
        } catch (...) {
          connected.arrive();  // let the timer run so the failure surfaces
          throw;
        }
        connected.arrive();
        go.wait();
        const std::string key = "ops/" + std::to_string(i), ctr = key + "/n";
        const std::vector<uint8_t> value(32, static_cast<uint8_t>('a' + i % 26));
        long ops = 0;
        while (!stop.load(std::memory_order_relaxed) && !failed.load()) {
          store->set(key, value);
          if (store->get(key) != value) throw std::runtime_error("get returned a wrong value");
          store->add(ctr, 1);
          ops += 3;
        }
        total_ops += ops;
      },
      &error, &failed);
  end = Clock::now();
  timer.join();
  if (error) {
    std::fprintf(stderr, "store_load ops: client error: %s\n", error->c_str());
    return 1;
  }
  const double secs = seconds_between(start, end);
  const auto ops = static_cast<double>(total_ops.load());
  std::printf("ops clients=%d ops=%ld seconds=%.3f ops_per_s=%.0f server_cpu_us_per_op=%.2f\n",
              o.clients, total_ops.load(), secs, ops / secs,
              ops > 0 ? (cpu_end - cpu_start) * 1e6 / ops : 0.0);
  return 0;
}

// A barrier child's CPU seconds in each phase, sent to the parent once the child's WAITs
// returned.
struct ChildCpu {
  double connect = 0, barrier = 0;
};

// One byte per event on the coordination pipes between the barrier parent and its children.
constexpr char kPrepared = 'p', kStart = 's', kConnected = 'c', kGo = 'g', kReturned = 'r',
               kRelease = 'x';

void write_bytes(int fd, char byte, int count) {
  for (int i = 0; i < count; ++i) {
    if (::write(fd, &byte, 1) != 1) {
      std::perror("store_load: pipe write");
      std::_Exit(1);
    }
  }
}

// Reads `count` bytes equal to `want`; false (with a message) on EOF or another byte.
bool read_bytes(int fd, char want, int count) {
  for (int i = 0; i < count; ++i) {
    char byte = 0;
    if (::read(fd, &byte, 1) != 1 || byte != want) {
      std::fprintf(stderr, "store_load: a barrier child died or failed (waiting for '%c')\n", want);
      return false;
    }
  }
  return true;
}

// Leaves `n` warm thread stacks in glibc's stack cache (run.sh raises
// glibc.pthread.stack_cache_size so they all stay): every 1.13 client starts a callback thread
// in its constructor, and a fresh stack costs that thread an mmap, an mprotect and page faults
// for its static TLS (Debian's LibTorch loads ~290 libraries). A job's clients would each pay
// that on their own host; here it would be paid on the server's cores, inside the timed window.
void warm_thread_stacks(int n) {
  Gate exit;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads.emplace_back([&exit] { exit.wait(); });
  exit.open();
  for (auto& t : threads) t.join();
}

// One child process of the barrier: `n` clients, each with its own thread for the blocking
// ADD and WAIT. The threads exist before the parent's clock starts (creating them is the load
// generator's cost, not a client's); on the parent's start signal the clients are constructed
// (connected) one after another on this process's coordinator thread, so each child is one
// stream of connects. Tells the parent when all are connected and when all WAITs returned;
// holds every connection open until released. Then writes its CPU seconds in the two phases
// (ChildCpu) to `cpu_to_parent` in one write.
int barrier_child(const Options& o, int first_index, int n, const std::string& prefix,
                  int from_parent, int to_parent, int cpu_to_parent) {
  std::vector<std::unique_ptr<c10d::TCPStore>> stores(static_cast<size_t>(n));
  Gate go, release;
  Countdown returned(n);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      go.wait();
      try {
        c10d::TCPStore& store = *stores[static_cast<size_t>(i)];
        if (store.add(prefix + "count", 1) == o.clients) store.set(prefix + "done", {'1'});
        store.wait({prefix + "done"});
      } catch (const std::exception& e) {
        // The barrier cannot complete without this client: fail the whole child at once (the
        // parent sees the pipe close and stops the other children).
        std::fprintf(stderr, "store_load barrier: client error: %s\n", e.what());
        std::_Exit(1);
      }
      returned.arrive();
      release.wait();  // keep every connection open until the server's RSS is read
    });
  }
  warm_thread_stacks(n);  // after the client threads took theirs: these are for c10d's
  write_bytes(to_parent, kPrepared, 1);
  if (!read_bytes(from_parent, kStart, 1)) std::_Exit(1);
  const double cpu_start = self_cpu_seconds();
  for (int i = 0; i < n; ++i) {
    try {
      stores[static_cast<size_t>(i)] = connect(o, first_index + i);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "store_load barrier: client error: %s\n", e.what());
      std::_Exit(1);
    }
  }
  const double cpu_connected = self_cpu_seconds();
  write_bytes(to_parent, kConnected, 1);
  if (!read_bytes(from_parent, kGo, 1)) std::_Exit(1);
  go.open();
  returned.wait();
  write_bytes(to_parent, kReturned, 1);
  const ChildCpu cpu{cpu_connected - cpu_start, self_cpu_seconds() - cpu_connected};
  if (::write(cpu_to_parent, &cpu, sizeof cpu) != sizeof cpu) {  // < PIPE_BUF: never interleaved
    std::perror("store_load: pipe write");
    std::_Exit(1);
  }
  if (!read_bytes(from_parent, kRelease, 1)) std::_Exit(1);
  release.open();
  for (auto& t : threads) t.join();
  return 0;
}

// The barrier's clients are spread over child processes of at most --clients-per-process
// clients: a 1.13 client holds two sockets and RLIMIT_NOFILE caps each process. The clock
// starts once every child has its threads ready.
int run_barrier(const Options& o) {
  const int procs = (o.clients + o.clients_per_process - 1) / o.clients_per_process;
  const std::string prefix = "barrier/" + std::to_string(::getpid()) + "/";
  int down[2], up[2], cpu_up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0 || ::pipe(cpu_up) != 0) {
    std::perror("store_load: pipe");
    return 1;
  }
  std::vector<pid_t> children;
  for (int k = 0, first_index = 0; k < procs; ++k) {
    const int n = o.clients / procs + (k < o.clients % procs ? 1 : 0);
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("store_load: fork");
      return 1;
    }
    if (pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      ::close(cpu_up[0]);
      std::fflush(stdout);
      std::_Exit(barrier_child(o, first_index, n, prefix, down[0], up[1], cpu_up[1]));
    }
    children.push_back(pid);
    first_index += n;
  }
  ::close(down[0]);
  ::close(up[1]);
  ::close(cpu_up[1]);
  bool ok = read_bytes(up[0], kPrepared, procs);
  const double cpu_first = o.server_pid > 0 ? cpu_seconds(o.server_pid) : 0;
  const auto first = Clock::now();
  if (ok) write_bytes(down[1], kStart, procs);
  ok = ok && read_bytes(up[0], kConnected, procs);
  const auto ready = Clock::now();
  const double cpu_ready = o.server_pid > 0 ? cpu_seconds(o.server_pid) : 0;
  if (ok) write_bytes(down[1], kGo, procs);
  ok = ok && read_bytes(up[0], kReturned, procs);
  const auto last = Clock::now();
  long rss_kb = 0, hwm_kb = 0;
  double cpu_last = 0;
  if (o.server_pid > 0) {
    cpu_last = cpu_seconds(o.server_pid);
    rss_kb = status_kb(o.server_pid, "VmRSS");
    hwm_kb = status_kb(o.server_pid, "VmHWM");
  }
  ChildCpu clients_cpu;
  for (int k = 0; ok && k < procs; ++k) {
    ChildCpu child;
    if (::read(cpu_up[0], &child, sizeof child) != sizeof child) {  // whole: written at once
      std::fprintf(stderr, "store_load: a barrier child died before reporting its CPU time\n");
      ok = false;
      break;
    }
    clients_cpu.connect += child.connect;
    clients_cpu.barrier += child.barrier;
  }
  if (ok) write_bytes(down[1], kRelease, procs);
  ::close(down[1]);
  ::close(up[0]);
  ::close(cpu_up[0]);
  if (!ok) {
    for (pid_t pid : children) ::kill(pid, SIGKILL);  // the others may be parked in a WAIT
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!ok) {
    std::fprintf(stderr, "store_load barrier: failed with %d clients\n", o.clients);
    return 1;
  }
  std::printf(
      "barrier clients=%d procs=%d connect_s=%.3f barrier_s=%.3f total_s=%.3f "
      "rss_kb=%ld hwm_kb=%ld server_cpu_connect_s=%.2f server_cpu_barrier_s=%.2f "
      "client_cpu_connect_s=%.2f client_cpu_barrier_s=%.2f\n",
      o.clients, procs, seconds_between(first, ready), seconds_between(ready, last),
      seconds_between(first, last), rss_kb, hwm_kb, cpu_ready - cpu_first, cpu_last - cpu_ready,
      clients_cpu.connect, clients_cpu.barrier);
  return 0;
}

}  // namespace

// The barrier warms a stack per client for c10d's callback threads (warm_thread_stacks); glibc
// keeps only 40 MiB of freed stacks unless told more at start-up, so the program re-executes
// itself once with glibc.pthread.stack_cache_size raised (kept in GLIBC_TUNABLES for the child
// processes it forks).
void ensure_stack_cache(const Options& o, char** argv) {
  constexpr const char* kTunable = "glibc.pthread.stack_cache_size";
  const char* current = std::getenv("GLIBC_TUNABLES");
  if (current != nullptr && std::strstr(current, kTunable) != nullptr) return;
  const auto bytes =
      static_cast<unsigned long long>(o.clients_per_process) * 2 * (kThreadStack + 64 * 1024);
  std::string tunables = std::string(kTunable) + "=" + std::to_string(bytes);
  if (current != nullptr && *current != '\0') tunables = std::string(current) + ":" + tunables;
  ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  std::perror("store_load: re-executing with a larger thread stack cache");  // runs on without
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.mode == "barrier") ensure_stack_cache(o, argv);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kThreadStack);
  pthread_setattr_default_np(&attr);  // applies to std::thread and c10d's own threads
  pthread_attr_destroy(&attr);
  return o.mode == "ops" ? run_ops(o) : run_barrier(o);
}
