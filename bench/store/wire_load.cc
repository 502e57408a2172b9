// wire_load: the store benchmark's barrier with the clients' own cost taken out of the way.
// N clients are raw TCPStore connections (1.13 numbering; one connection each, as a >= 2.2
// client holds) driven by one thread, so nearly all of the machine goes to the server under
// test. The same load for any TCPStore server: bench/store/run.sh runs it against PyTorch's
// server and ddp-rendezvous, beside store_load's LibTorch clients (with which the goal is
// measured).
//
//   wire_load --host H1,H2,... --port P --clients N [--in-flight K] [--server-pid PID]
//
// connect: each client opens its connection and has one GETNUMKEYS answered (so the server
//   has accepted and served it), at most K (default 64) clients at a time: a server that
//   accepts slowly is not also flooded past its listen queue. Client i uses the (i mod count)-th
//   address of --host (see store_load for why several loopback addresses).
// barrier: every client sends ADD(counter, 1); the one that reads N sends SET(done); each
//   sends WAIT(done) once its ADD is answered; the barrier ends with the last STOP_WAITING.
// Prints, with the fields of `store_load barrier`:
//   "wire_barrier clients=N connect_s=C barrier_s=B total_s=T rss_kb=R hwm_kb=H
//    server_cpu_connect_s=X server_cpu_barrier_s=Y client_cpu_connect_s=U client_cpu_barrier_s=V"
// Exits 1 with a message on a connection error or a wrong reply, 2 when --host is not a list of
// IP addresses or the descriptors do not suffice; other bad arguments get CLI11's usage error.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/store/proc_stats.h"
#include "rendezvous/protocol.h"

namespace {

namespace asio = boost::asio;
namespace rendezvous = ddp::rendezvous;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> hosts;
  std::uint16_t port = 0;
  std::size_t clients = 0;
  std::size_t in_flight = 64;
  long server_pid = 0;
};

std::string encode(const rendezvous::Request& request) {
  return *rendezvous::encode_request(rendezvous::Dialect::kLegacy113,
                                     request);  // all exist in 1.13
}

// The run's state, on the one thread of `io`.
struct Run {
  Run(asio::io_context& io, const Options& o) {
    for (std::size_t i = 0; i < o.clients; ++i) sockets.emplace_back(io);
    const std::string prefix = "wire/" + std::to_string(::getpid()) + "/";
    ping = encode({.op = rendezvous::Op::kGetNumKeys});
    add = encode({.op = rendezvous::Op::kAdd, .key = prefix + "count", .delta = 1});
    set = encode({.op = rendezvous::Op::kSet, .key = prefix + "done", .value = "1"});
    wait = encode({.op = rendezvous::Op::kWait, .keys = {prefix + "done"}});
  }
  std::vector<tcp::endpoint> endpoints;
  std::vector<tcp::socket> sockets;
  std::string ping, add, set, wait;
  std::size_t next = 0;       // connect: the next client to open
  std::size_t connected = 0;  // connect: clients answered
  std::size_t released = 0;   // barrier: STOP_WAITINGs received
  Clock::time_point ready, last;
  std::string error;  // the first failure
};

// Connects clients in turn until none is left (run K of these for K in flight).
awaitable<void> connector(Run& run) {
  while (run.next < run.sockets.size()) {
    const std::size_t i = run.next++;
    tcp::socket& s = run.sockets[i];
    co_await s.async_connect(run.endpoints[i % run.endpoints.size()], use_awaitable);
    s.set_option(tcp::no_delay(true));
    co_await asio::async_write(s, asio::buffer(run.ping), use_awaitable);
    char reply[8];
    co_await asio::async_read(s, asio::buffer(reply), use_awaitable);
    if (++run.connected == run.sockets.size()) run.ready = Clock::now();
  }
}

awaitable<void> barrier_client(Run& run, std::size_t i) {
  tcp::socket& s = run.sockets[i];
  co_await asio::async_write(s, asio::buffer(run.add), use_awaitable);
  std::int64_t count = 0;
  co_await asio::async_read(s, asio::buffer(&count, sizeof count), use_awaitable);
  if (count < 1 || static_cast<std::size_t>(count) > run.sockets.size()) {
    throw std::runtime_error("ADD returned " + std::to_string(count));
  }
  if (static_cast<std::size_t>(count) == run.sockets.size()) {
    co_await asio::async_write(s, asio::buffer(run.set), use_awaitable);
  }
  co_await asio::async_write(s, asio::buffer(run.wait), use_awaitable);
  std::uint8_t reply = 0xFF;
  co_await asio::async_read(s, asio::buffer(&reply, 1), use_awaitable);
  if (reply != rendezvous::kStopWaiting)
    throw std::runtime_error("WAIT answered " + std::to_string(reply));
  if (++run.released == run.sockets.size()) run.last = Clock::now();
}

// Spawns `body` on `io`; its first failure stops the io_context with the reason kept.
template <typename Body>
void spawn(asio::io_context& io, Run& run, Body body) {
  asio::co_spawn(io, std::move(body), [&io, &run](const std::exception_ptr& failure) {
    if (!failure) return;
    try {
      std::rethrow_exception(failure);
    } catch (const boost::system::system_error& e) {
      if (run.error.empty()) run.error = e.code().message();  // what() adds a source location
    } catch (const std::exception& e) {
      if (run.error.empty()) run.error = e.what();
    }
    io.stop();
  });
}

// One socket per client plus a few: raise the soft limit to the hard one when needed.
bool enough_descriptors(std::size_t clients) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t want = clients + 32;
  if (limit.rlim_cur < want && limit.rlim_max >= want) {
    limit.rlim_cur = want;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur >= want;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"TCPStore barrier of raw 1.13-protocol clients on one thread"};
  app.add_option("--host", o.hosts, "server address(es), comma-separated")
      ->required()
      ->delimiter(',');
  app.add_option("--port", o.port, "server port")->required()->check(CLI::Range(1, 65535));
  app.add_option("--clients", o.clients, "clients (one connection each)")
      ->required()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--in-flight", o.in_flight, "clients connecting at a time")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--server-pid", o.server_pid, "read the server's CPU and memory from /proc");
  CLI11_PARSE(app, argc, argv);

  asio::io_context io;
  Run run(io, o);
  for (const std::string& host : o.hosts) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
      std::fprintf(stderr, "wire_load: --host wants IP addresses, not '%s'\n", host.c_str());
      return 2;
    }
    run.endpoints.emplace_back(address, o.port);
  }
  if (!enough_descriptors(o.clients)) {
    std::fprintf(stderr, "wire_load: %zu clients need %zu descriptors; raise ulimit -n\n",
                 o.clients, o.clients + 32);
    return 2;
  }

  const double cpu_first = o.server_pid > 0 ? ddp::bench::cpu_seconds(o.server_pid) : 0;
  const double own_first = ddp::bench::self_cpu_seconds();
  const auto first = Clock::now();
  for (std::size_t k = 0; k < std::min(o.in_flight, o.clients); ++k) {
    spawn(io, run, connector(run));
  }
  io.run();
  if (!run.error.empty()) {
    std::fprintf(stderr, "wire_load: connect failed: %s\n", run.error.c_str());
    return 1;
  }
  const double cpu_ready = o.server_pid > 0 ? ddp::bench::cpu_seconds(o.server_pid) : 0;
  const double own_ready = ddp::bench::self_cpu_seconds();
  io.restart();
  for (std::size_t i = 0; i < o.clients; ++i) spawn(io, run, barrier_client(run, i));
  io.run();
  if (!run.error.empty()) {
    std::fprintf(stderr, "wire_load: barrier failed: %s\n", run.error.c_str());
    return 1;
  }
  const double own_last = ddp::bench::self_cpu_seconds();
  long rss_kb = 0, hwm_kb = 0;
  double cpu_last = 0;
  if (o.server_pid > 0) {  // every connection is still open
    cpu_last = ddp::bench::cpu_seconds(o.server_pid);
    rss_kb = ddp::bench::status_kb(o.server_pid, "VmRSS");
    hwm_kb = ddp::bench::status_kb(o.server_pid, "VmHWM");
  }
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  std::printf(
      "wire_barrier clients=%zu connect_s=%.3f barrier_s=%.3f total_s=%.3f rss_kb=%ld "
      "hwm_kb=%ld server_cpu_connect_s=%.2f server_cpu_barrier_s=%.2f client_cpu_connect_s=%.2f "
      "client_cpu_barrier_s=%.2f\n",
      o.clients, seconds(first, run.ready), seconds(run.ready, run.last), seconds(first, run.last),
      rss_kb, hwm_kb, cpu_ready - cpu_first, cpu_last - cpu_ready, own_ready - own_first,
      own_last - own_ready);
  return 0;
}
