// The silence check against a peer whose kernel really stops acknowledging
// (agent/presence_tcp.h). Two network namespaces joined by a veth pair (made here, removed at
// the end; needs root, ip and tc): the watched end lives in one, its peer in the other and
// never reads (a stalled process: its kernel still acknowledges, so no verdict); then the
// peer's interface drops everything it sends (a zero-length pfifo, as a machine that lost
// power: no ack, no reset, no ICMP): the verdict comes between the timeout and the timeout
// plus one beat. Skipped where namespaces or tc are unavailable.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "agent/presence_tcp.h"
#include "tests/skip.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = SilenceWatch::Clock;
using namespace std::chrono_literals;

constexpr auto kTimeout = 500ms;

bool sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Two namespaces A (10.241.0.1) and B (10.241.0.2) on a veth pair; removed on destruction.
struct TwoHosts {
  std::string a = "ddpsa" + std::to_string(::getpid());
  std::string b = "ddpsb" + std::to_string(::getpid());
  bool made = false;
  TwoHosts() {
    made = sh("ip netns add " + a) && sh("ip netns add " + b) &&
           sh("ip link add va" + a + " type veth peer name vb" + a) &&
           sh("ip link set va" + a + " netns " + a) && sh("ip link set vb" + a + " netns " + b) &&
           sh("ip -n " + a + " addr add 10.241.0.1/24 dev va" + a) &&
           sh("ip -n " + b + " addr add 10.241.0.2/24 dev vb" + a) &&
           sh("ip -n " + a + " link set va" + a + " up") &&
           sh("ip -n " + b + " link set vb" + a + " up");
  }
  ~TwoHosts() {
    sh("ip netns del " + a);
    sh("ip netns del " + b);
  }
  // Runs `make` with this thread in namespace `ns` (sockets keep the namespace they were
  // made in), then returns to the original one.
  template <typename Make>
  auto inside(const std::string& ns, Make make) {
    const int home = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int there = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(home >= 0);
    REQUIRE(there >= 0);
    REQUIRE(::setns(there, CLONE_NEWNET) == 0);
    auto result = make();
    REQUIRE(::setns(home, CLONE_NEWNET) == 0);
    ::close(there);
    ::close(home);
    return result;
  }
};

// Ticks `watch` every beat for `span`, as the agent's beat timer does; when it was silent.
std::optional<Clock::time_point> tick_for(SilenceWatch& watch, tcp::socket& socket,
                                          std::chrono::milliseconds span) {
  const auto end = Clock::now() + span;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(beat_interval(kTimeout));  // the beat timer's period
    const auto now = Clock::now();
    if (watch.tick(socket, now)) return now;
  }
  return std::nullopt;
}

TEST_CASE("a peer whose kernel stops acknowledging is judged silent within a beat of the timeout",
          "[presence]") {
  if (::geteuid() != 0) ddp::testing::skip("needs root for network namespaces");
  TwoHosts hosts;
  if (!hosts.made) ddp::testing::skip("network namespaces or veth unavailable here");
  asio::io_context io;
  auto acceptor = hosts.inside(hosts.b, [&] {
    return tcp::acceptor(io, tcp::endpoint(asio::ip::make_address("10.241.0.2"), 0));
  });
  auto watched = hosts.inside(hosts.a, [&] { return tcp::socket(io, tcp::v4()); });
  watched.connect(acceptor.local_endpoint());
  tcp::socket peer = acceptor.accept();  // never reads: a stalled process
  REQUIRE(arm_silence_check(watched, kTimeout));
  SilenceWatch watch(kTimeout);
  CHECK_FALSE(tick_for(watch, watched, 3 * kTimeout));  // its kernel still acknowledges

  if (!sh("ip netns exec " + hosts.b + " tc qdisc add dev vb" + hosts.a + " root pfifo limit 0")) {
    ddp::testing::skip("tc cannot add a pfifo queue here");
  }
  const auto cut = Clock::now();
  auto verdict = tick_for(watch, watched, 3s);
  REQUIRE(verdict);
  const auto took = *verdict - cut;
  INFO("cut -> silent: " << std::chrono::duration<double>(took).count() << " s");
  CHECK(took >= kTimeout);
  CHECK(took <= kTimeout + beat_interval(kTimeout) + 250ms);  // + scheduling slack
}

}  // namespace
}  // namespace ddp::agent
