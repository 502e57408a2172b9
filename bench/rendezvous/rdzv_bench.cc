// rdzv_bench: K simulated agents join one job on a running rendezvous daemon and report how
// long the rendezvous and a cross-node teardown take. All agents live in this one process as
// raw native-protocol connections on one Asio io_context (one thread), so the daemon sees K
// real TCP connections while the client side stays cheap.
//
// The rendezvous (timed from the first connect issued to the last agent's RoundComplete, JOIN
// min = max = K), in one of two flows:
//   pipelined (default)  each agent goes on by itself, as a real agent does: RdzvClient::join()
//             runs from the agent's own connect callback and sends the JOIN (plain) or
//             AUTH_HELLO (--secret) at once, then, with a secret, the signed JOIN as soon as
//             its own CHALLENGE arrives (rendezvous/rdzv_client.cc). No agent waits for
//             another, so the connects, handshakes and JOINs of different agents overlap. This
//             is the flow the rendezvous figure measures because it is what real agents do,
//             not because it is faster.
//   --phased  barriers, for a per-phase breakdown: all K connect; (--secret) every agent sends
//             AUTH_HELLO, wait for every CHALLENGE; every agent sends JOIN, wait for every
//             RoundComplete. Each phase is timed from its first byte sent to its last reply.
// Then, in both flows:
//   stop      agent 0 reports a worker failure -> every agent has StopWorkers
//   finish    every agent reports WORKERS_STOPPED -> every agent has JobFinished
// The assignments are checked: group ranks are a permutation of 0..K-1, rank offsets sum the
// local world sizes, every agent names the same store address, every JobFinished the same
// exit code. Prints one JSON object on stdout (times, and this process's own CPU time);
// exits 1 on a wrong result or a timeout.
// Every agent's first write starts with HELLO (the version handshake, membership/wire.h), sent
// with what follows it rather than a round trip earlier as RdzvClient::join() does; the VERSION
// answer is checked for compatibility and otherwise skipped.
// --loss spare|joiner (bench/spares/run.sh): instead of stop and finish, node loss -> every
// node in its next round. The participant of group rank 1 closes its connection at T0 (the
// daemon sees the close at once, as when an agent is SIGKILLed) and every survivor answers its
// StopWorkers at once with WORKERS_STOPPED (simulated agents run no workers: there is no
// stop or spawn time here, only the rendezvous's). spare: a (K+1)th agent joined the running job
// first and waits (JOINED waiting); timed: detect (T0 -> every survivor has StopWorkers),
// reround (-> every node, spare included, has the next RoundComplete). joiner: JOIN min = K-1;
// detect, reround (-> the K-1 survivors' RoundComplete), then a new agent connects and joins:
// join (its connect -> every survivor has StopWorkers, node joined), reround2 (-> all K have the
// RoundComplete admitting it); total = the two stretches (the gap between them is this process's
// own, not the job's). Checked: the restart count never moves, the rounds' ranks are consistent
// (as below), with a spare no survivor's group rank changes and the spare gets rank 1;
// ranks_moved counts the survivors whose group rank changed.
// --hold N: between the rendezvous and stop, the job stays running with K nodes for N seconds.
// --secret S: every agent authenticates as ddprun's agents do (job secrets): it derives the job
// key (one HMAC, as RdzvClient::join() does per connection), sends AUTH_HELLO, and on its
// CHALLENGE a JOIN inside a signed AUTH_FRAME carrying the X25519 key wrap when the challenge
// says the job is not keyed yet (every CHALLENGE that reaches the daemon before the job's first
// JOIN does), then every later request signed.
// Client crypto: every simulated agent derives its own job key, wraps the key for its own
// challenge (a fresh X25519 pair: ~0.1 ms) and MACs its own frames. A real agent pays its wrap on
// its own host, all agents in parallel; here the simulated agents share this one thread, so the
// wraps add up (docs/security.md, "Cost").
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <deque>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/auth/auth.h"
#include "rendezvous/auth/key_wrap.h"
#include "rendezvous/membership/wire.h"
#include "rendezvous/protocol.h"

namespace {

namespace asio = boost::asio;
namespace m = ddp::rendezvous::membership;
namespace rdzv = ddp::rendezvous;
namespace auth = ddp::rendezvous::auth;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// JOIN of simulated agent i: min..max nodes, a node name and address of its own, `workers`
// workers (local world size).
m::JoinRequest join_request(const std::string& run_id, std::uint32_t min_nodes,
                            std::uint32_t max_nodes, std::size_t i, std::uint32_t workers) {
  m::JoinRequest r;
  r.run_id = run_id;
  r.config.min_nodes = min_nodes;
  r.config.max_nodes = max_nodes;
  // Generous: this process cannot heartbeat while it is busy sending JOINs.
  r.config.keep_alive_interval = std::chrono::seconds(30);
  r.node = {"agent-" + std::to_string(i),
            "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250), 29500, workers};
  return r;
}

// The local world size of simulated agent i: 1..8, so that rank offsets differ from group ranks.
std::uint32_t default_workers(std::size_t i) { return static_cast<std::uint32_t>(1 + i % 8); }

struct Agent {
  Agent(asio::io_context& io, std::size_t i, std::uint32_t w) : socket(io), index(i), workers(w) {}
  tcp::socket socket;
  std::size_t index;
  std::uint32_t workers;  // its local world size
  bool connected = false;
  bool closed = false;  // --loss: this agent's connection was closed (the lost node)
  std::string in;
  std::vector<char> buffer = std::vector<char>(2048);
  std::deque<std::string> out;  // every write of this agent (kept until the run ends)
  bool hello_sent = false;      // HELLO went out with its first write
  auth::Key key{};              // --secret: the job key, derived by this agent at AUTH_HELLO
  std::optional<auth::MacKey> mac_key;              // `key` made ready, as RdzvClient keeps it
  std::optional<rdzv::ChallengeMessage> challenge;  // --secret: the handshake's answer
  std::uint64_t counter = 0;
  std::optional<m::Joined> joined;
  std::optional<m::RoundComplete> round;  // the latest
  std::optional<m::StopWorkers> stop;     // the latest
  std::optional<m::JobFinished> finished;
  Clock::time_point round_at{};  // when the latest RoundComplete / StopWorkers was read
  Clock::time_point stop_at{};
};

class Bench {
 public:
  // `pipelined`: each agent starts its join from its own connect completion and sends its
  // signed JOIN from its own CHALLENGE (the real agent's flow); otherwise the caller drives
  // barrier phases (phase()).
  // Every JOIN says min_nodes..max_nodes.
  Bench(asio::io_context& io, std::size_t k, std::optional<std::string> secret, std::string run_id,
        bool pipelined, std::uint32_t min_nodes, std::uint32_t max_nodes)
      : io_(io),
        secret_(std::move(secret)),
        run_id_(std::move(run_id)),
        pipelined_(pipelined),
        min_nodes_(min_nodes),
        max_nodes_(max_nodes) {
    for (std::size_t i = 0; i < k; ++i) {
      agents_.push_back(std::make_unique<Agent>(io, i, default_workers(i)));
    }
  }

  // Issues the K connects; each completion starts reading (and, pipelined, the agent's join).
  void open(const tcp::endpoint& endpoint) {
    for (auto& a : agents_) connect(*a, endpoint);
  }

  // Pipelined: one more agent with `workers` workers connects and joins (a spare, a joiner).
  Agent& add(const tcp::endpoint& endpoint, std::uint32_t workers) {
    agents_.push_back(std::make_unique<Agent>(io_, agents_.size(), workers));
    connect(*agents_.back(), endpoint);
    return *agents_.back();
  }

  // The node of `a` is lost: its connection closes (the daemon sees the close at once, as
  // when an agent is SIGKILLed; a machine that vanishes is found by missed heartbeats).
  void close(Agent& a) {
    a.closed = true;
    boost::system::error_code ignored;
    a.socket.close(ignored);
  }

  // From now on every agent answers each StopWorkers at once with WORKERS_STOPPED, as an
  // agent whose workers stop instantly would.
  void answer_stops() { answer_stops_ = true; }
  bool connect_failed() const { return connect_failed_; }

  // Runs until `done` holds for every agent; false on a timeout or a protocol error.
  template <typename Done>
  bool wait_all(Done done, std::chrono::seconds limit) {
    auto all = [&] {
      for (; checked_ < agents_.size() && done(*agents_[checked_]); ++checked_) {
      }
      return checked_ == agents_.size();
    };
    checked_ = 0;
    return run_until(all, limit);
  }

  // Sends `bytes(i)` from every agent i, then runs until `done` holds for every agent.
  template <typename Make, typename Done>
  std::optional<std::chrono::duration<double>> phase(Make bytes, Done done,
                                                     std::chrono::seconds limit) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < agents_.size(); ++i) {
      std::string b = bytes(i);
      if (!b.empty()) send(*agents_[i], std::move(b));
    }
    if (!wait_all(done, limit)) return std::nullopt;
    return Clock::now() - t0;
  }

  const std::vector<std::unique_ptr<Agent>>& agents() const { return agents_; }
  Agent& agent(std::size_t i) { return *agents_[i]; }
  bool secret() const { return secret_.has_value(); }
  Clock::time_point all_connected() const { return all_connected_; }
  Clock::time_point all_challenged() const { return all_challenged_; }

  // --secret: what agent `a` sends first, as RdzvClient::join() does: the job key is derived
  // (kept in `a`), then AUTH_HELLO.
  std::string hello(Agent& a) {
    a.key = auth::job_key(*secret_, run_id_);
    a.mac_key.emplace(a.key);
    return rdzv::encode_auth_hello(run_id_);
  }

  // Agent `a`'s JOIN: as is, or (--secret, after its CHALLENGE) signed, with the key wrap when
  // the CHALLENGE said the job is not keyed yet.
  std::string join(Agent& a) {
    return outgoing(
        a, m::encode_request(join_request(run_id_, min_nodes_, max_nodes_, a.index, a.workers)),
        true);
  }

  // What agent `a` sends for native request `bytes`: as is, or (--secret, after its handshake)
  // signed; a JOIN carries the key wrap when the CHALLENGE said the job is not keyed yet.
  std::string outgoing(Agent& a, std::string bytes, bool is_join) {
    if (!secret_) return bytes;
    std::optional<auth::KeyWrap> wrap;
    if (is_join && !a.challenge->job_keyed) {
      auto w = auth::wrap_job_key(a.key, a.challenge->daemon_public, a.challenge->challenge);
      if (!w) {
        std::cerr << "key wrap failed: " << w.status().message() << "\n";
        protocol_error_ = true;
        return {};
      }
      wrap = *w;
    }
    return sign(a, bytes, wrap);
  }

  // Keeps every connection open and served for `d`: the job stays running with K nodes
  // (for looking at it, e.g. through the status page), within the agents' 30 s keep-alive.
  void hold(std::chrono::seconds d) { io_.run_for(d); }

 private:
  void connect(Agent& a, const tcp::endpoint& endpoint) {
    a.socket.async_connect(endpoint, [this, agent = &a](boost::system::error_code ec) {
      if (ec) {
        std::cerr << "connect failed: " << ec.message() << "\n";
        connect_failed_ = true;
        return;
      }
      agent->socket.set_option(tcp::no_delay(true));
      agent->connected = true;
      if (++connected_ == agents_.size()) all_connected_ = Clock::now();
      read(*agent);
      if (pipelined_) send(*agent, secret_ ? hello(*agent) : join(*agent));
    });
  }

  template <typename Pred>
  bool run_until(Pred pred, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!pred()) {
      if (Clock::now() >= deadline || protocol_error_ || connect_failed_) return false;
      io_.run_one_for(std::chrono::milliseconds(50));
    }
    return true;
  }

  std::string sign(Agent& a, std::string_view request, const std::optional<auth::KeyWrap>& wrap) {
    const std::string covered = rdzv::auth_covered(wrap, request);
    const auth::Mac mac =
        auth::frame_mac(*a.mac_key, a.challenge->challenge, a.counter, run_id_, covered);
    return rdzv::encode_auth_frame(a.counter++, mac, covered);
  }

  void send(Agent& a, std::string bytes) {
    if (bytes.empty()) return;  // outgoing() failed and flagged the protocol error
    if (!a.hello_sent) {
      // The version handshake comes first on every native connection.
      bytes.insert(0, m::encode_hello(m::this_version()));
      a.hello_sent = true;
    }
    a.out.push_back(std::move(bytes));  // stable until the run ends: writes never overlap it
    asio::async_write(a.socket, asio::buffer(a.out.back()),
                      [](boost::system::error_code ec, std::size_t) {
                        if (ec) std::cerr << "write failed: " << ec.message() << "\n";
                      });
  }

  void on_challenge(Agent& a, const rdzv::ChallengeMessage& c) {
    a.challenge = c;
    if (++challenged_ == agents_.size()) all_challenged_ = Clock::now();
    if (pipelined_) send(a, join(a));
  }

  void read(Agent& a) {
    a.socket.async_read_some(
        asio::buffer(a.buffer), [this, &a](boost::system::error_code ec, std::size_t n) {
          if (ec) return;  // the daemon closed: the wait times out and reports it
          a.in.append(a.buffer.data(), n);
          std::size_t used = 0;
          for (;;) {
            const std::string_view rest = std::string_view(a.in).substr(used);
            if (!rest.empty() && static_cast<std::uint8_t>(rest[0]) == rdzv::kChallengeType) {
              auto c = rdzv::parse_challenge(rest);
              if (c.state != m::DecodeState::kComplete) break;
              used += c.consumed;
              on_challenge(a, c.value);
              continue;
            }
            if (!rest.empty() && static_cast<std::uint8_t>(rest[0]) == m::kVersionType) {
              auto v = m::decode_version(rest);
              if (v.state == m::DecodeState::kIncomplete) break;
              if (v.state == m::DecodeState::kError || !m::compatible(m::this_version(), v.value)) {
                std::cerr << (v.state == m::DecodeState::kError
                                  ? "bad VERSION: " + v.error
                                  : m::skew_message(m::this_version(), v.value, ""))
                          << "\n";
                protocol_error_ = true;
                return;
              }
              used += v.consumed;
              continue;
            }
            auto d = m::decode_push(rest);
            if (d.state == m::DecodeState::kIncomplete) break;
            if (d.state == m::DecodeState::kError) {
              std::cerr << "bad push: " << d.error << "\n";
              protocol_error_ = true;
              return;
            }
            used += d.consumed;
            if (auto* j = std::get_if<m::Joined>(&d.value)) a.joined = *j;
            if (auto* r = std::get_if<m::RoundComplete>(&d.value)) {
              a.round = *r;
              a.round_at = Clock::now();
            }
            if (auto* s = std::get_if<m::StopWorkers>(&d.value)) {
              a.stop = *s;
              a.stop_at = Clock::now();
              if (answer_stops_) {
                send(a, outgoing(a, m::encode_request(m::WorkersStopped{s->round}), false));
              }
            }
            if (auto* f = std::get_if<m::JobFinished>(&d.value)) a.finished = *f;
            if (auto* e = std::get_if<m::ErrorEvent>(&d.value)) {
              std::cerr << "error push: " << e->message << "\n";
              protocol_error_ = true;
            }
          }
          a.in.erase(0, used);
          read(a);
        });
  }

  asio::io_context& io_;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::size_t checked_ = 0;
  std::size_t connected_ = 0;
  std::size_t challenged_ = 0;
  Clock::time_point all_connected_{};
  Clock::time_point all_challenged_{};
  bool connect_failed_ = false;
  bool protocol_error_ = false;
  std::optional<std::string> secret_;
  std::string run_id_;
  bool pipelined_;
  std::uint32_t min_nodes_;
  std::uint32_t max_nodes_;
  bool answer_stops_ = false;
};

void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// This process's CPU time so far (user + system): what the K simulated agents cost.
double own_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// The round of `participants` (one RoundComplete each): group ranks a permutation, offsets =
// prefix sums of their local world sizes, one store address. Empty when it holds.
std::string check_assignments(const std::vector<const Agent*>& participants) {
  std::uint64_t world = 0;
  for (const Agent* a : participants) world += a->workers;
  std::vector<const m::RoundComplete*> by_rank(participants.size(), nullptr);
  for (const Agent* a : participants) {
    const auto& r = *a->round;
    if (r.group_rank >= participants.size() || by_rank[r.group_rank]) return "group ranks collide";
    if (r.world_size != world) return "world sizes differ";
    if (r.group_world_size != participants.size()) return "wrong group world size";
    by_rank[r.group_rank] = &r;
  }
  std::uint64_t offset = 0;
  for (const auto* r : by_rank) {
    if (r->rank_offset != offset) return "rank offsets are not prefix sums";
    if (r->store_port != by_rank[0]->store_port || r->store_addr != by_rank[0]->store_addr) {
      return "agents disagree on the store address";
    }
    offset += r->local_world_size;
  }
  return "";
}

std::vector<const Agent*> all_of(const Bench& bench) {
  std::vector<const Agent*> v;
  for (const auto& a : bench.agents()) v.push_back(a.get());
  return v;
}

// The latest of `when(a)` over `agents`.
template <typename When>
Clock::time_point latest(const std::vector<const Agent*>& agents, When when) {
  Clock::time_point t{};
  for (const Agent* a : agents) t = std::max(t, when(*a));
  return t;
}

// --loss: the running K-node job loses the participant of group rank 1 (its connection closes
// at T0), every survivor answers its StopWorkers at once. `spare`: a (K+1)th agent joined the
// running job beforehand and waits; the job re-forms with it. Otherwise (MIN = K-1): the job
// re-forms with the K-1 survivors, then a new agent connects and joins, and the job restarts
// to admit it. Adds the phases to `out`; returns what went wrong, empty when every check held.
std::string lose_a_node(Bench& bench, const tcp::endpoint& endpoint, bool spare,
                        nlohmann::json& out) {
  const auto limit = std::chrono::seconds(60);
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const std::vector<const Agent*> first = all_of(bench);
  const std::uint64_t r1 = first.front()->round->round;
  const std::uint32_t restarts = first.front()->round->restart_count;
  Agent* lost = nullptr;
  for (const auto& a : bench.agents()) {
    if (a->round->group_rank == 1) lost = a.get();
  }
  std::vector<const Agent*> survivors;
  std::vector<std::uint32_t> before;  // each survivor's group rank before the loss
  for (const Agent* a : first) {
    if (a == lost) continue;
    survivors.push_back(a);
    before.push_back(a->round->group_rank);
  }
  // Runs until `done` holds for each of `members`; then the latest of their `when`.
  auto until = [&](const std::vector<const Agent*>& members, auto done,
                   Clock::time_point Agent::*when) -> std::optional<Clock::time_point> {
    std::vector<bool> is_member(bench.agents().size());
    for (const Agent* a : members) is_member[a->index] = true;
    if (!bench.wait_all([&](const Agent& a) { return !is_member[a.index] || done(a); }, limit)) {
      return std::nullopt;
    }
    return latest(members, [when](const Agent& a) { return a.*when; });
  };
  // Until every survivor was told to stop round `r` for `reason`.
  auto told_to_stop = [&](std::uint64_t r, m::StopReason reason) {
    auto t = until(
        survivors, [r](const Agent& a) { return a.stop && a.stop->round == r; }, &Agent::stop_at);
    for (const Agent* a : survivors) {
      if (t && a->stop->reason != reason) t.reset();
    }
    return t;
  };
  // Until every one of `members` has the RoundComplete of round `r` (same restart count).
  auto in_round = [&](std::uint64_t r, const std::vector<const Agent*>& members) {
    auto t = until(
        members, [r](const Agent& a) { return a.round && a.round->round == r; }, &Agent::round_at);
    for (const Agent* a : members) {
      if (t && a->round->restart_count != restarts) t.reset();
    }
    return t;
  };
  auto ranks_moved = [&] {
    int moved = 0;
    for (std::size_t i = 0; i < survivors.size(); ++i) {
      moved += survivors[i]->round->group_rank != before[i];
    }
    return moved;
  };

  const Agent* spare_agent = nullptr;
  if (spare) {
    spare_agent = &bench.add(endpoint, lost->workers);
    if (!bench.wait_all([](const Agent& a) { return a.joined.has_value(); }, limit)) {
      return "the spare did not join";
    }
    if (!spare_agent->joined->waiting) return "the spare was admitted, not kept waiting";
  }
  bench.answer_stops();
  const auto t0 = Clock::now();
  bench.close(*lost);
  const auto detected = told_to_stop(r1, m::StopReason::kNodeLost);
  if (!detected) return "the survivors were not told to stop (node lost)";
  out["detect_s"] = seconds(*detected - t0);
  std::vector<const Agent*> second = survivors;
  if (spare) second.push_back(spare_agent);
  const auto formed = in_round(r1 + 1, second);
  if (!formed) return "no new round with the same restart count";
  if (auto bad = check_assignments(second); !bad.empty()) return "after the loss: " + bad;
  out["reround_s"] = seconds(*formed - *detected);
  out["ranks_moved"] = ranks_moved();
  if (spare) {
    if (ranks_moved() != 0) return "a survivor's group rank changed";
    if (spare_agent->round->group_rank != 1) return "the spare did not get the lost node's rank";
    out["total_s"] = seconds(*formed - t0);
    return "";
  }
  const auto tj = Clock::now();
  const Agent& joiner = bench.add(endpoint, lost->workers);
  const auto admitted = told_to_stop(r1 + 1, m::StopReason::kNodeJoined);
  if (!admitted) return "the survivors were not told to stop (node joined)";
  out["join_s"] = seconds(*admitted - tj);
  second.push_back(&joiner);
  const auto full = in_round(r1 + 2, second);
  if (!full) return "no round admitting the joiner";
  if (auto bad = check_assignments(second); !bad.empty()) return "after the join: " + bad;
  out["reround2_s"] = seconds(*full - *admitted);
  out["ranks_moved"] = ranks_moved();
  out["total_s"] = seconds(*formed - t0) + seconds(*full - tj);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdzv_bench: K simulated agents against a running ddp-rendezvous"};
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::size_t k = 100;
  std::string run_id = "bench";
  app.add_option("--host", host);
  app.add_option("--port", port)->required();
  app.add_option("--agents", k)->required()->check(CLI::Range(1, 1 << 20));
  app.add_option("--run-id", run_id);
  std::string secret;
  app.add_option("--secret", secret, "Authenticate every agent with this job secret");
  bool phased = false;
  app.add_flag("--phased", phased,
               "Barrier phases (all connect, all handshake, all JOIN) instead of each agent "
               "going on by itself; for the per-phase breakdown");
  unsigned hold_s = 0;
  app.add_option("--hold", hold_s,
                 "After the round completes, keep the job running this many seconds (< 30)")
      ->check(CLI::Range(0, 29));
  std::string loss;
  app.add_option("--loss", loss,
                 "Instead of stop and finish: the node of group rank 1 is lost; 'spare': a "
                 "spare waits and replaces it; 'joiner': MIN = K-1, the job re-forms, then a new "
                 "agent joins")
      ->check(CLI::IsMember({"spare", "joiner"}));
  CLI11_PARSE(app, argc, argv);
  if (!loss.empty() && (k < 2 || phased || hold_s > 0)) {
    std::cerr << "--loss needs --agents >= 2 and the pipelined flow, without --hold\n";
    return 2;
  }
  raise_open_file_limit();

  asio::io_context io(1);
  const auto max_nodes = static_cast<std::uint32_t>(k);
  Bench bench(io, k, secret.empty() ? std::nullopt : std::optional<std::string>(secret), run_id,
              !phased, loss == "joiner" ? max_nodes - 1 : max_nodes, max_nodes);
  std::uint64_t world = 0;
  for (std::size_t i = 0; i < k; ++i) world += default_workers(i);
  const tcp::endpoint endpoint(asio::ip::make_address(host), port);
  const auto limit = std::chrono::seconds(60);
  auto assigned = [](const Agent& a) { return a.round.has_value(); };
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  nlohmann::json out = {{"agents", k},
                        {"auth", !secret.empty()},
                        {"flow", phased ? "phased" : "pipelined"},
                        {"world_size", world}};

  const auto c0 = Clock::now();
  bench.open(endpoint);
  if (phased) {
    if (!bench.wait_all([](const Agent& a) { return a.connected; }, limit) ||
        bench.connect_failed()) {
      std::cerr << "could not open " << k << " connections; raise ulimit -n\n";
      return 1;
    }
    out["connect_s"] = seconds(bench.all_connected() - c0);
    std::chrono::duration<double> handshake{0};
    if (bench.secret()) {
      auto hs = bench.phase([&](std::size_t i) { return bench.hello(bench.agent(i)); },
                            [](const Agent& a) { return a.challenge.has_value(); }, limit);
      if (!hs) return std::cerr << "handshake phase timed out\n", 1;
      handshake = *hs;
    }
    out["handshake_s"] = handshake.count();
    auto join =
        bench.phase([&](std::size_t i) { return bench.join(bench.agent(i)); }, assigned, limit);
    if (!join) return std::cerr << "join phase timed out\n", 1;
    out["join_s"] = join->count();
  } else if (!bench.wait_all(assigned, limit)) {
    if (bench.connect_failed()) {
      std::cerr << "could not open " << k << " connections; raise ulimit -n\n";
    } else {
      std::cerr << "rendezvous failed (see above) or timed out\n";
    }
    return 1;
  } else {
    out["connect_s"] = seconds(bench.all_connected() - c0);
    if (bench.secret()) out["challenge_s"] = seconds(bench.all_challenged() - c0);
  }
  out["rendezvous_s"] = seconds(Clock::now() - c0);
  if (auto bad = check_assignments(all_of(bench)); !bad.empty()) {
    std::cerr << "wrong assignment: " << bad << "\n";
    return 1;
  }
  if (!loss.empty()) {
    out["loss"] = loss;
    if (auto bad = lose_a_node(bench, endpoint, loss == "spare", out); !bad.empty()) {
      std::cerr << "--loss " << loss << ": " << bad << "\n";
      return 1;
    }
    out["bench_cpu_s"] = own_cpu_seconds();
    std::cout << out.dump() << std::endl;
    return 0;
  }
  if (hold_s > 0) bench.hold(std::chrono::seconds(hold_s));
  const std::uint64_t round = bench.agents()[0]->round->round;
  auto stop = bench.phase(
      [&](std::size_t i) {
        if (i != 0) return std::string();
        m::Failure f;
        f.exit_code = 3;
        f.message = "bench failure";
        return bench.outgoing(bench.agent(0), m::encode_request(m::ReportFailure{round, {f}}),
                              false);
      },
      [](const Agent& a) { return a.stop.has_value(); }, limit);
  if (!stop) return std::cerr << "stop phase timed out\n", 1;
  auto finish = bench.phase(
      [&](std::size_t i) {
        return i == 0 ? std::string()
                      : bench.outgoing(bench.agent(i), m::encode_request(m::WorkersStopped{round}),
                                       false);
      },
      [](const Agent& a) { return a.finished.has_value(); }, limit);
  if (!finish) return std::cerr << "finish phase timed out\n", 1;
  for (const auto& a : bench.agents()) {
    if (a->finished->exit_code != 3) return std::cerr << "exit codes differ\n", 1;
  }

  out["stop_s"] = stop->count();
  out["finish_s"] = finish->count();
  out["bench_cpu_s"] = own_cpu_seconds();
  std::cout << out.dump() << std::endl;
  return 0;
}
