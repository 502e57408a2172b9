// rdzv_bench: K simulated agents join one job on a running rendezvous daemon and report how
// long the rendezvous and a cross-node teardown take. All agents live in this one process as
// raw native-protocol connections on one Asio io_context (one thread), so the daemon sees K
// real TCP connections while the client side stays cheap.
//
// The rendezvous (timed from the first connect issued to the last agent's RoundComplete, JOIN
// min = max = K), in one of two flows:
//   pipelined (default)  each agent goes on by itself, as a real agent does: RdzvClient::join()
//             runs from the agent's own connect callback and sends, at once, the JOIN (plain)
//             or (--secret) AUTH_OPEN and the signed JOIN in one write, without waiting for a
//             challenge (rendezvous/rdzv_client.cc open_signed()). When the daemon answers the
//             open with a CHALLENGE instead (it does not know the job's key yet, or its
//             OpenGuard wants a challenge: rendezvous/auth/open_guard.h), the agent sends its
//             JOIN again under that challenge (on_challenge()). No agent waits for another, so
//             the connects, opens and JOINs of different agents overlap. This is the flow the
//             rendezvous figure measures because it is what real agents do, not because it is
//             faster.
//   --phased  barriers, for a per-phase breakdown of the challenged way: all K connect;
//             (--secret) every agent sends AUTH_HELLO, wait for every CHALLENGE; every agent
//             sends JOIN (signed under its CHALLENGE), wait for every RoundComplete. Each phase
//             is timed from its first byte sent to its last reply. With a secret every agent
//             is challenged here: this is the cost of the round trip AUTH_OPEN avoids.
// Then, in both flows:
//   stop      agent 0 reports a worker failure -> every agent has StopWorkers
//   finish    every agent reports WORKERS_STOPPED -> every agent has JobFinished
// The assignments are checked: group ranks are a permutation of 0..K-1, rank offsets sum the
// local world sizes, every agent names the same store address, every JobFinished the same
// exit code. Prints one JSON object on stdout (times, how many agents the daemon challenged,
// and this process's own CPU time); exits 1 on a wrong result or a timeout.
// --first-alone (pipelined): agent 0 connects and joins alone, and the other K-1 connect when
// its Joined arrives. With a secret on a daemon that learns the job's key by trust on first use,
// the key is then registered before the others open, so the daemon can take their AUTH_OPENs
// without a challenge; without it, this one thread sends every agent's open before it reads
// the first CHALLENGE, so the daemon does not know the key yet when any open arrives. The
// rendezvous is still timed from agent 0's connect (its round trips included).
// --prepared (pipelined): every agent's first write (its JOIN; with --secret its AUTH_OPEN and
// signed JOIN, with its own job key, nonce and stamp) is built before the first connect, so the
// timed rendezvous holds no client crypto. Each real agent builds its first write in its own
// process on its own host, in parallel with the others; this one thread would otherwise build
// K of them in series inside the timed window. What is then timed is the daemon and the
// sockets; the bench's CPU figure still includes the preparation.
// --range FROM:TO: this process simulates only agents FROM..TO-1 of the K-agent job; another
// process runs the rest (run.sh: agent 0 alone, as a first agent on its own host whose round
// trip does not queue behind the others' connects). Agent 0's process reports the failure;
// each process checks its own agents' assignments. --start-at T: issue the first connect at
// wall clock T (unix ms), so processes sharing a job start together.
// --hold N: between the rendezvous and stop, the job stays running with K nodes for N seconds.
// --secret S: every agent authenticates as ddprun's agents do (job secrets): it derives the job
// key (one HMAC, as RdzvClient::join() does per connection) and signs its JOIN, pipelined over
// its own AUTH_OPEN (its own random nonce and wall clock), phased or after a CHALLENGE over the
// daemon's challenge with the X25519 key wrap when the CHALLENGE says the job is not keyed yet
// (trust on first use: every CHALLENGE sent before the job's first JOIN reached the daemon),
// then every later request signed under the challenge in force, with the next counter.
// Client crypto: every simulated agent derives its own job key, draws its own nonce, wraps the
// key for its own challenge and MACs its own frames. What is shared is what one real agent
// process caches once: rendezvous/auth/key_wrap.h keeps one X25519 pair and one shared secret
// per daemon per process, so a process's first wrap costs two scalar multiplications (~0.1 ms)
// and every other one an HMAC. Each real agent is its own process and pays that first wrap
// once, on its own host, all agents in parallel; the simulated agents here share one process
// and its cache (as they share this one thread), so the 0.1 ms shows once, not per agent
// (docs/security.md, "Cost").
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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/wall_clock.h"
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

// JOIN of simulated agent i of k: min = max = k, a node name and address of its own.
m::JoinRequest join_request(const std::string& run_id, std::size_t k, std::size_t i) {
  m::JoinRequest r;
  r.run_id = run_id;
  r.config.min_nodes = r.config.max_nodes = static_cast<std::uint32_t>(k);
  // Generous: this process cannot heartbeat while it is busy sending JOINs.
  r.config.keep_alive_interval = std::chrono::seconds(30);
  r.node = {"agent-" + std::to_string(i),
            "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250), 29500,
            static_cast<std::uint32_t>(1 + i % 8)};
  return r;
}

struct Agent {
  Agent(asio::io_context& io, std::size_t i) : socket(io), index(i) {}
  tcp::socket socket;
  std::size_t index;
  bool connected = false;
  std::string in;
  std::vector<char> buffer = std::vector<char>(2048);
  std::deque<std::string> out;  // every write of this agent (kept until the run ends)
  std::string first;            // --prepared: its first write, built before the run
  // --secret: the job key, derived by this agent when it opens (AUTH_OPEN or AUTH_HELLO).
  auth::Key key{};
  std::optional<auth::MacKey> mac_key;  // `key` made ready, as RdzvClient keeps it
  // --secret: the challenge its frames are MACed over (its open's, or the daemon's), and the
  // counter of its next frame.
  std::optional<auth::Challenge> in_force;
  std::uint64_t counter = 0;
  // --secret: the daemon's CHALLENGE, when it sent one (AUTH_HELLO, or an open it did not take).
  std::optional<rdzv::ChallengeMessage> challenge;
  std::optional<m::RoundComplete> round;
  std::optional<m::StopWorkers> stop;
  std::optional<m::JobFinished> finished;
};

class Bench {
 public:
  // `pipelined`: each agent starts its join from its own connect completion (with a secret:
  // AUTH_OPEN and the signed JOIN) and, when challenged, sends its JOIN again from its own
  // CHALLENGE (the real agent's flow); otherwise the caller drives barrier phases (phase()).
  // `first_alone` (pipelined): agent 0 connects and joins alone; the other K-1 connect when its
  // Joined arrives (with a secret the job's key is then registered, so their opens can go
  // through unchallenged).
  // This process simulates agents [from, to) of a job of `k` agents (all of them by default).
  Bench(asio::io_context& io, std::size_t k, std::size_t from, std::size_t to,
        std::optional<std::string> secret, std::string run_id, bool pipelined, bool first_alone,
        bool prepared)
      : io_(io),
        k_(k),
        secret_(std::move(secret)),
        run_id_(std::move(run_id)),
        pipelined_(pipelined),
        first_alone_(first_alone),
        prepared_(prepared) {
    for (std::size_t i = from; i < to; ++i) agents_.push_back(std::make_unique<Agent>(io, i));
  }
  std::size_t job_agents() const { return k_; }

  // --prepared: builds every agent's first write now, before anything is timed.
  void prepare() {
    for (auto& a : agents_) a->first = secret_ ? open_signed(*a) : join(*a);
  }

  // Issues the K connects (first_alone: agent 0's; the rest on its Joined); each completion
  // starts reading (and, pipelined, the agent's join).
  void open(const tcp::endpoint& endpoint) {
    endpoint_ = endpoint;
    connect(0, first_alone_ ? 1 : agents_.size());
  }
  bool connect_failed() const { return connect_failed_; }

  void connect(std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      Agent* a = agents_[i].get();
      a->socket.async_connect(endpoint_, [this, agent = a](boost::system::error_code ec) {
        if (ec) {
          std::cerr << "connect failed: " << ec.message() << "\n";
          connect_failed_ = true;
          return;
        }
        agent->socket.set_option(tcp::no_delay(true));
        agent->connected = true;
        if (++connected_ == agents_.size()) all_connected_ = Clock::now();
        read(*agent);
        if (pipelined_) {
          send(*agent, prepared_ ? std::move(agent->first)
                       : secret_ ? open_signed(*agent)
                                 : join(*agent));
        }
      });
    }
  }

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
  // The first and the last CHALLENGE received, and how many agents got one (--secret).
  Clock::time_point first_challenge() const { return first_challenge_; }
  Clock::time_point last_challenge() const { return last_challenge_; }
  std::size_t challenged() const { return challenged_; }

  // --secret, pipelined: what agent `a` sends first, as RdzvClient::open_signed() does: the
  // job key is derived (kept in `a`), then AUTH_OPEN (its own nonce and wall clock) and its
  // JOIN as frame 0 MACed over the open's challenge, in one write.
  std::string open_signed(Agent& a) {
    a.key = auth::job_key(*secret_, run_id_);
    a.mac_key.emplace(a.key);
    auto nonce = auth::random_bytes32();
    if (!nonce) {
      std::cerr << "no nonce: " << nonce.status().message() << "\n";
      protocol_error_ = true;
      return {};
    }
    rdzv::AuthOpen open;
    open.run_id = run_id_;
    open.nonce = *nonce;
    open.unix_ms = ddp::unix_ms_now();
    a.in_force = auth::open_challenge(open.nonce, open.unix_ms);
    return rdzv::encode_auth_open(open) + join(a);
  }

  // --secret, phased: AUTH_HELLO (the challenged way); the job key is derived first.
  std::string hello(Agent& a) {
    a.key = auth::job_key(*secret_, run_id_);
    a.mac_key.emplace(a.key);
    return rdzv::encode_auth_hello(run_id_);
  }

  // Agent `a`'s JOIN: as is, or (--secret) signed under the challenge in force, with the key
  // wrap when it is the daemon's and its CHALLENGE said the job is not keyed yet.
  std::string join(Agent& a) {
    return outgoing(a, m::encode_request(join_request(run_id_, k_, a.index)), true);
  }

  // What agent `a` sends for native request `bytes`: as is, or (--secret) signed under the
  // challenge in force with the next counter; a JOIN under a daemon CHALLENGE that said the job
  // is not keyed yet carries the key wrap.
  std::string outgoing(Agent& a, std::string bytes, bool is_join) {
    if (!secret_) return bytes;
    std::optional<auth::KeyWrap> wrap;
    if (is_join && a.challenge && !a.challenge->job_keyed) {
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
    const auth::Mac mac = auth::frame_mac(*a.mac_key, *a.in_force, a.counter, run_id_, covered);
    return rdzv::encode_auth_frame(a.counter++, mac, covered);
  }

  void send(Agent& a, std::string bytes) {
    if (bytes.empty()) return;          // outgoing() failed and flagged the protocol error
    a.out.push_back(std::move(bytes));  // stable until the run ends: writes never overlap it
    asio::async_write(a.socket, asio::buffer(a.out.back()),
                      [](boost::system::error_code ec, std::size_t) {
                        if (ec) std::cerr << "write failed: " << ec.message() << "\n";
                      });
  }

  // A CHALLENGE: the answer to AUTH_HELLO (phased), or (pipelined) to an open the daemon did
  // not take, whose optimistic JOIN it dropped unread: the JOIN goes again as frame 0 under
  // the daemon's challenge, as RdzvClient::on_challenge() does.
  void on_challenge(Agent& a, const rdzv::ChallengeMessage& c) {
    if (a.challenge) {
      std::cerr << "agent " << a.index << " got a second CHALLENGE\n";
      protocol_error_ = true;
      return;
    }
    a.challenge = c;
    a.in_force = c.challenge;
    a.counter = 0;
    last_challenge_ = Clock::now();
    if (challenged_++ == 0) first_challenge_ = last_challenge_;
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
              if (c.state != rdzv::ParseState::kComplete) break;
              used += c.consumed;
              on_challenge(a, c.value);
              continue;
            }
            auto d = m::decode_push(std::string_view(a.in).substr(used));
            if (d.state == m::DecodeState::kIncomplete) break;
            if (d.state == m::DecodeState::kError) {
              std::cerr << "bad push: " << d.error << "\n";
              protocol_error_ = true;
              return;
            }
            used += d.consumed;
            if (std::holds_alternative<m::Joined>(d.message) && first_alone_ && a.index == 0) {
              connect(1, agents_.size());
            }
            if (auto* r = std::get_if<m::RoundComplete>(&d.message)) a.round = *r;
            if (auto* s = std::get_if<m::StopWorkers>(&d.message)) a.stop = *s;
            if (auto* f = std::get_if<m::JobFinished>(&d.message)) a.finished = *f;
            if (auto* e = std::get_if<m::ErrorEvent>(&d.message)) {
              std::cerr << "error push: " << e->message << "\n";
              protocol_error_ = true;
            }
          }
          a.in.erase(0, used);
          read(a);
        });
  }

  asio::io_context& io_;
  std::size_t k_;  // the job's agents, in this process or not
  std::vector<std::unique_ptr<Agent>> agents_;
  std::size_t checked_ = 0;
  std::size_t connected_ = 0;
  std::size_t challenged_ = 0;
  Clock::time_point all_connected_{};
  Clock::time_point first_challenge_{};
  Clock::time_point last_challenge_{};
  bool connect_failed_ = false;
  bool protocol_error_ = false;
  std::optional<std::string> secret_;
  std::string run_id_;
  bool pipelined_;
  bool first_alone_;
  bool prepared_;
  tcp::endpoint endpoint_;
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

// Group ranks a permutation, offsets = prefix sums of local world sizes, one store address.
std::string check_assignments(const Bench& bench, std::uint64_t world) {
  const auto& agents = bench.agents();
  std::vector<const m::RoundComplete*> by_rank(bench.job_agents(), nullptr);
  for (const auto& a : agents) {
    const auto& r = *a->round;
    if (r.group_rank >= by_rank.size() || by_rank[r.group_rank]) return "group ranks collide";
    if (r.world_size != world) return "world sizes differ";
    if (r.store_port != agents[0]->round->store_port ||
        r.store_addr != agents[0]->round->store_addr) {
      return "agents disagree on the store address";
    }
    by_rank[r.group_rank] = &r;
  }
  if (agents.size() < by_rank.size()) return "";  // --range: the others are another process's
  std::uint64_t offset = 0;
  for (const auto* r : by_rank) {
    if (r->rank_offset != offset) return "rank offsets are not prefix sums";
    offset += r->local_world_size;
  }
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
               "Barrier phases (all connect, all AUTH_HELLO -> CHALLENGE, all JOIN) instead of "
               "each agent going on by itself; the per-phase breakdown of the challenged way "
               "(with --secret every agent is challenged, no AUTH_OPEN)");
  bool first_alone = false;
  app.add_flag("--first-alone", first_alone,
               "Pipelined: agent 0 connects and joins alone, the others connect when its Joined "
               "arrives (with --secret the job's key is then known to the daemon)")
      ->excludes("--phased");
  bool prepared = false;
  app.add_flag("--prepared", prepared,
               "Pipelined: build every agent's first write before the first connect (real agents "
               "build theirs on their own hosts in parallel), so no client crypto is timed")
      ->excludes("--phased");
  std::string range;
  app.add_option("--range", range,
                 "FROM:TO: this process simulates only agents FROM..TO-1 of the --agents job "
                 "(another process runs the others, e.g. agent 0 alone: a first agent on its "
                 "own host); agent 0's process reports the failure");
  double start_at = 0;
  app.add_option("--start-at", start_at,
                 "Wall clock (unix ms, fractions allowed) at which to issue the first connect, so "
                 "that processes sharing one job start together");
  unsigned hold_s = 0;
  app.add_option("--hold", hold_s,
                 "After the round completes, keep the job running this many seconds (< 30)")
      ->check(CLI::Range(0, 29));
  CLI11_PARSE(app, argc, argv);
  raise_open_file_limit();

  std::size_t from = 0;
  std::size_t to = k;
  if (!range.empty()) {
    const auto colon = range.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument(range);
      from = std::stoul(range.substr(0, colon));
      to = std::stoul(range.substr(colon + 1));
    } catch (const std::exception&) {
      std::cerr << "rdzv_bench: --range " << range << " is not FROM:TO\n";
      return 2;
    }
    if (from >= to || to > k || phased || first_alone) {
      std::cerr << "rdzv_bench: --range needs 0 <= FROM < TO <= --agents, pipelined\n";
      return 2;
    }
  }
  asio::io_context io(1);
  Bench bench(io, k, from, to, secret.empty() ? std::nullopt : std::optional<std::string>(secret),
              run_id, !phased, first_alone, prepared);
  std::uint64_t world = 0;
  for (std::size_t i = 0; i < k; ++i) world += join_request(run_id, k, i).node.local_world_size;
  const tcp::endpoint endpoint(asio::ip::make_address(host), port);
  const auto limit = std::chrono::seconds(60);
  auto assigned = [](const Agent& a) { return a.round.has_value(); };
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  nlohmann::json out = {{"agents", k},
                        {"simulated", to - from},
                        {"auth", !secret.empty()},
                        {"flow", !range.empty()            ? "split"
                                 : phased                  ? "phased"
                                 : first_alone && prepared ? "first_alone_prepared"
                                 : first_alone             ? "first_alone"
                                 : prepared                ? "prepared"
                                                           : "pipelined"},
                        {"world_size", world}};

  if (prepared) bench.prepare();
  if (start_at > 0) {
    std::this_thread::sleep_until(std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::duration<double, std::milli>(start_at))));
  }
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
    if (bench.secret() && bench.challenged() > 0) {
      out["first_challenge_s"] = seconds(bench.first_challenge() - c0);
      out["challenge_s"] = seconds(bench.last_challenge() - c0);
    }
  }
  out["challenged"] = bench.challenged();
  out["rendezvous_s"] = seconds(Clock::now() - c0);
  if (auto bad = check_assignments(bench, world); !bad.empty()) {
    std::cerr << "wrong assignment: " << bad << "\n";
    return 1;
  }
  if (hold_s > 0) bench.hold(std::chrono::seconds(hold_s));
  const std::uint64_t round = bench.agents()[0]->round->round;
  auto stop = bench.phase(
      [&](std::size_t i) {
        if (bench.agent(i).index != 0) return std::string();
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
        return bench.agent(i).index == 0
                   ? std::string()
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
