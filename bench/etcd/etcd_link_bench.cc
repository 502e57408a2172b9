// etcd_link_bench: K agents' etcd links (agent/membership/etcd_link.h, the product code) in this
// one process on one io_context join one etcd job, and the time from the first link opened to
// the last agent's RoundComplete is printed. Each link does what a real agent's does: a lease
// (etcd::Session), a read of P/finished, a watch of P/host, a read of P/state, a daemon of its
// own on port 0, a campaign for P/host; the winner keeps its daemon, every other link closes
// its own and joins the winner's through a NativeLink. So the figure is the etcd part (per
// agent: lease grant, two reads, a watch, a campaign txn, each a call to etcd) plus the native
// daemon's assignment of K nodes. Every agent advertises its own loopback address
// (127.0.X.Y), so its node key, daemon and workers' store are its own.
// The assignment is checked: group ranks a permutation of 0..K-1, one store address, one
// elected host. Prints one JSON object on stdout; exits 1 on a wrong result or a timeout.
//   etcd_link_bench --endpoints 127.0.0.1:2379 --agents 1000 [--timeout 60]
// Run with bench/etcd/link_bench.py (it starts etcd); not a test.
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "agent/membership/etcd_link.h"
#include "agent/membership/etcd_settings.h"

namespace {

namespace asio = boost::asio;
namespace m = ddp::rendezvous::membership;
namespace agent = ddp::agent;
using Clock = std::chrono::steady_clock;

struct Node final : agent::LinkEvents {
  agent::AgentConfig config;
  agent::RunSetup setup;
  std::unique_ptr<agent::EtcdLink> link;
  std::optional<m::RoundComplete> round;
  std::optional<Clock::time_point> joined;  // its JOIN accepted: its etcd part done
  std::optional<std::string> lost;
  std::function<void()> progress;

  void on_payload(const m::Payload& payload) override {
    if (std::holds_alternative<m::Joined>(payload) && !joined) joined = Clock::now();
    if (auto* r = std::get_if<m::RoundComplete>(&payload)) {
      round = *r;
      progress();
    }
  }
  void on_reform(const std::string&) override {}
  void on_link_lost(const ddp::Status& why) override {
    lost = why.message();
    progress();
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"K etcd links join one job through etcd and the elected host's daemon"};
  std::string endpoints;
  std::size_t k = 100;
  int timeout_s = 60;
  app.add_option("--endpoints", endpoints, "etcd host:port[,...]")->required();
  app.add_option("--agents", k, "simulated agents")->check(CLI::Range(2, 60000));
  app.add_option("--timeout", timeout_s, "seconds until every agent has its round");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);

  asio::io_context io;
  const std::string run_id =
      "bench-" + std::to_string(Clock::now().time_since_epoch().count() % 1000000007);
  std::vector<std::unique_ptr<Node>> nodes;
  std::size_t done = 0;
  for (std::size_t i = 0; i < k; ++i) {
    auto n = std::make_unique<Node>();
    n->config.rdzv_backend = "etcd";
    n->config.rdzv_endpoint = endpoints;
    n->config.run_id = run_id;
    n->config.job.min_nodes = n->config.job.max_nodes = static_cast<std::uint32_t>(k);
    // Generous: this one thread cannot heartbeat for K agents while it is busy joining them.
    n->config.rdzv_conf = {{"lease_ttl", "60"}, {"keep_alive_interval", "30"}};
    n->config.local_addr = "127.0." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250);
    n->setup.group.run_id = run_id;
    n->setup.hostname = n->config.local_addr;
    n->progress = [&done, &io, k, node = n.get()] {
      if (++done == k) io.stop();
      (void)node;
    };
    nodes.push_back(std::move(n));
  }

  const auto t0 = Clock::now();
  for (auto& n : nodes) {
    auto settings = agent::etcd_settings(n->config);
    if (!settings) {
      std::cerr << settings.status().message() << "\n";
      return 1;
    }
    auto link = agent::EtcdLink::start(io, n->config, n->setup, std::move(*settings), nullptr);
    if (!link) {
      std::cerr << link.status().message() << "\n";
      return 1;
    }
    n->link = std::move(*link);
    n->link->open(*n);
  }
  asio::steady_timer deadline(io, std::chrono::seconds(timeout_s));
  bool timed_out = false;
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) {
      timed_out = true;
      io.stop();
    }
  });
  io.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  std::set<std::uint32_t> ranks;
  std::set<std::string> stores;
  std::size_t lost = 0;
  std::vector<double> joined_s;  // per agent: first link opened -> its JOIN accepted
  for (auto& n : nodes) {
    if (n->lost) {
      if (lost++ == 0) std::cerr << "an agent was lost: " << *n->lost << "\n";
      continue;
    }
    if (n->joined) joined_s.push_back(std::chrono::duration<double>(*n->joined - t0).count());
    if (!n->round) continue;
    ranks.insert(n->round->group_rank);
    stores.insert(n->round->store_addr + ":" + std::to_string(n->round->store_port));
  }
  const bool ok = !timed_out && lost == 0 && ranks.size() == k && *ranks.rbegin() == k - 1 &&
                  stores.size() == 1;
  std::sort(joined_s.begin(), joined_s.end());
  auto joined_at = [&](double q) {
    return joined_s.empty() ? 0.0 : joined_s[static_cast<std::size_t>(q * (joined_s.size() - 1))];
  };
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  std::cout << nlohmann::json{{"agents", k},
                              {"ok", ok},
                              {"timed_out", timed_out},
                              {"lost", lost},
                              {"assigned", ranks.size()},
                              {"rendezvous_s", seconds},
                              {"joined_s",
                               {{"p10", joined_at(0.1)},
                                {"p50", joined_at(0.5)},
                                {"p90", joined_at(0.9)},
                                {"max", joined_at(1.0)}}},
                              {"bench_cpu_s", static_cast<double>(self.ru_utime.tv_sec) +
                                                  self.ru_utime.tv_usec / 1e6 +
                                                  static_cast<double>(self.ru_stime.tv_sec) +
                                                  self.ru_stime.tv_usec / 1e6}}
                   .dump()
            << std::endl;
  // Clean up: every link closed, then each revokes its lease (its destructor).
  for (auto& n : nodes) n->link->close();
  io.restart();
  io.poll();
  nodes.clear();
  return ok ? 0 : 1;
}
