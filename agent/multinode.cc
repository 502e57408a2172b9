#include "agent/multinode.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "agent/daemon_connect.h"
#include "agent/error_report.h"
#include "agent/failure_wire.h"
#include "agent/host_listen.h"
#include "agent/join_progress.h"
#include "agent/output.h"
#include "agent/rdzv_settings.h"
#include "agent/static_host.h"
#include "agent/stdin_watch.h"
#include "agent/supervisor.h"
#include "proc/spawner.h"
#include "rendezvous/rdzv_client.h"
#include "rendezvous/server.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The host agent keeps its daemon up after JobFinished until every other node of the job
// closed its connection (so their JobFinished is not cut off), for at most this long (a
// frozen or cut-off node keeps its connection open).
constexpr auto kFinishLinger = 5s;
// Set in every worker's environment: which agent started it (for the death watch).
constexpr const char* kAgentVariable = "DDPRUN_AGENT_ID";

class Node final : public proc::ProcessObserver {
 public:
  Node(const AgentConfig& config, RunSetup& setup, proc::DeathWatch& death_watch, RdzvSettings rdzv)
      : config_(config),
        setup_(setup),
        death_watch_(death_watch),
        rdzv_(std::move(rdzv)),
        router_(config, config.log_dir.has_value()),
        launcher_(io_, *this, {.death_watch = &death_watch, .adopt_orphans = true}),
        signals_(io_),
        stdin_(io_),
        linger_(io_),
        rejoin_timer_(io_),
        progress_(io_, [this] {
          if (client_ && !done_) client_->query_waiting();
        }) {}

  int run() {
    // The death watch's environment match must reach this agent's workers only: other jobs
    // may share the run id (static jobs default to "none") and other agents of this job on
    // the same machine share it too. So the agent's own mark goes in with the run id, before
    // anything can fail (the watcher kills by the marks when this agent exits).
    std::string agent_mark = advertised_addr() + ":" + std::to_string(::getpid());
    setup_.base_env[kAgentVariable] = agent_mark;
    death_watch_.add_environment_mark(std::string(kAgentVariable) + "=" + agent_mark);
    death_watch_.add_environment_mark("TORCHELASTIC_RUN_ID=" + setup_.group.run_id);
    if (!start_daemon() || !start_worker_store()) return 1;
    for (int sig : config_.signals_to_handle) {
      boost::system::error_code ec;
      signals_.add(sig, ec);
      if (ec) spdlog::warn("cannot handle signal {}: {}", sig, ec.message());
    }
    wait_signal();
    if (config_.exit_on_stdin_eof) {
      stdin_.start([this](const std::string& why) {
        spdlog::warn("{}: the launching ddprun or its ssh session is gone", why);
        on_signal(SIGTERM);
      });
    }
    connect_deadline_ = std::chrono::steady_clock::now() + rdzv_.config.join_timeout;
    connect();
    io_.run();
    return exit_code_;
  }

  // proc::ProcessObserver
  void on_output(int id, proc::StreamId stream, std::string_view bytes) override {
    router_.write(id, stream, bytes);
  }
  void on_output_end(int id, proc::StreamId stream) override { router_.end_stream(id, stream); }
  void on_exit(int id, proc::ExitStatus status) override {
    if (current_ != nullptr) current_->on_exit(id, status);
  }

 private:
  // The daemon runs here when this agent is the endpoint host: is_host=true demands it,
  // is_host unset tries to bind the endpoint (fails when another agent or daemon has it or
  // the address is not this machine's), is_host=false never hosts.
  bool start_daemon() {
    if (rdzv_.node_rank) return start_static_daemon();
    if (rdzv_.is_host == false) return true;
    auto server = listen_as_host(io_, rdzv_.host, rdzv_.port);
    if (!server) {
      if (rdzv_.is_host == true) {
        spdlog::error("--rdzv-conf is_host=true but the rendezvous cannot listen on {}:{}: {}",
                      rdzv_.host, rdzv_.port, server.status().message());
        return false;
      }
      spdlog::info("rendezvous endpoint {}:{} is not bindable here: joining it as a client",
                   rdzv_.host, rdzv_.port);
      return true;
    }
    daemon_ = std::move(server).value();
    spdlog::info("hosting the rendezvous for job {} on {}:{}", setup_.group.run_id, rdzv_.host,
                 daemon_->port());
    return true;
  }

  // Static backend: node rank 0 hosts the daemon on --master-addr:--master-port, and it is
  // the workers' store too (no separate worker store on any node).
  bool start_static_daemon() {
    if (*rdzv_.node_rank != 0) return true;
    auto host = start_static_host(io_, rdzv_.host, rdzv_.port);
    if (!host) {
      spdlog::error("{}", host.status().message());
      return false;
    }
    daemon_ = std::move(host->server);
    daemon_connect_host_ = host->connect_host;
    spdlog::info("node rank 0: hosting the rendezvous and the worker store for job {} on {}:{}",
                 setup_.group.run_id, rdzv_.host, daemon_->port());
    return true;
  }

  // A static node of rank > 0 retries reaching the daemon until join_timeout after its start
  // (node rank 0 may start later); every other agent tries once.
  bool retries_connecting() const { return rdzv_.node_rank && *rdzv_.node_rank != 0; }

  // Where this agent's rendezvous client connects, and for how long it keeps trying.
  DaemonEndpoint daemon_endpoint() const {
    DaemonEndpoint e;
    e.host = daemon_connect_host_.empty() ? rdzv_.host : daemon_connect_host_;
    e.port = rdzv_.port;
    e.attempt_timeout = rdzv_.connect_timeout;
    if (retries_connecting()) {
      e.retry_for = std::max(std::chrono::milliseconds(1),
                             std::chrono::duration_cast<std::chrono::milliseconds>(
                                 connect_deadline_ - std::chrono::steady_clock::now()));
    } else if (daemon_ == nullptr) {
      // c10d, not the host: srun/pbsdsh/ssh start every node at once, so the host agent may
      // not listen yet; keep trying for read_timeout, as torchrun's store client does.
      e.retry_for = rdzv_.connect_timeout;
    }
    return e;
  }

  void connect() {
    connect_daemon(io_,
                   {.on_event = [this](const rendezvous::membership::Payload& p) { on_event(p); },
                    .on_disconnect = [this](const Status& s) { on_disconnect(s); }},
                   daemon_endpoint(),
                   [this](Result<std::shared_ptr<rendezvous::RdzvClient>> client) {
                     if (done_) {
                       if (client) (*client)->close();
                       return;
                     }
                     if (!client) return finish(1, unreachable_message(client.status()));
                     client_ = std::move(client).value();
                     join();
                   });
  }

  std::string unreachable_message(const Status& s) const {
    if (!rdzv_.node_rank) {
      return s.message() +
             "; start the agent on the --rdzv-endpoint host (it hosts the "
             "rendezvous) or a ddp-rendezvous there, check the endpoint, or raise --rdzv-conf "
             "read_timeout";
    }
    return "node rank " + std::to_string(*rdzv_.node_rank) + ": " + s.message() +
           "; start the agent with --node-rank 0 on " + rdzv_.host +
           " (every node passes the same --master-addr and --master-port), or raise "
           "--rdzv-conf join_timeout";
  }

  // Every node holds a worker-store port for the whole job; the round's group-rank-0 node's
  // store is the one every worker uses. Static backend: none (the daemon is the store).
  bool start_worker_store() {
    if (rdzv_.node_rank) {
      store_port_ = daemon_ ? daemon_->port() : 0;
      return true;
    }
    rendezvous::ServerOptions options;
    options.port = store_port_ != 0            ? store_port_
                   : config_.master_port_given ? config_.master_port
                                               : 0;
    auto store = rendezvous::Server::start(io_, options);
    if (!store) {
      spdlog::error("cannot start the worker store: {}", store.status().message());
      return false;
    }
    store_ = std::move(store).value();
    store_port_ = store_->port();
    return true;
  }

  std::string advertised_addr() const {
    return config_.local_addr.empty() ? setup_.hostname : config_.local_addr;
  }

  void join() {
    rendezvous::membership::JoinRequest request;
    request.run_id = setup_.group.run_id;
    request.config = rdzv_.config;
    request.node.addr = advertised_addr();
    request.node.node_key = advertised_addr() + ":" + std::to_string(::getpid());
    request.node.store_port = store_port_;
    request.node.local_world_size = static_cast<std::uint32_t>(config_.nproc_per_node);
    request.node_rank = rdzv_.node_rank;
    client_->join(request, [this](Result<rendezvous::membership::Joined> joined) {
      if (!joined && retries_connecting() && joined.status().code() == ErrorCode::kJobFinished &&
          std::chrono::steady_clock::now() < connect_deadline_) {
        // Node rank 0 of the previous job on this port still lingers at its exit barrier
        // (back-to-back static jobs): wait for this job's node rank 0 to take the port.
        spdlog::info("{}:{} still serves a finished job; retrying", rdzv_.host, rdzv_.port);
        client_->close();
        client_.reset();
        rejoin_timer_.expires_after(100ms);  // a pause: nothing signals that daemon's exit
        rejoin_timer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec && !done_) connect();
        });
        return;
      }
      if (!joined) return finish(1, "rendezvous refused: " + joined.status().message());
      spdlog::info("joined job {} for round {}{}", setup_.group.run_id, joined->round,
                   joined->waiting ? " (waiting: a round is running)" : "");
      if (!joined->waiting) progress_.start();
    });
  }

  void on_event(const rendezvous::membership::Payload& payload) {
    if (finished_) return;
    if (auto* w = std::get_if<rendezvous::membership::Waiting>(&payload)) {
      if (round_ == 0) JoinProgress::report(*w);
      return;
    }
    if (auto* r = std::get_if<rendezvous::membership::RoundComplete>(&payload)) return on_round(*r);
    if (auto* s = std::get_if<rendezvous::membership::StopWorkers>(&payload)) return on_stop(*s);
    if (auto* f = std::get_if<rendezvous::membership::JobFinished>(&payload))
      return on_finished(*f);
    if (auto* e = std::get_if<rendezvous::membership::ErrorEvent>(&payload)) {
      // kPeerGone: the daemon removed this node (missed heartbeats, stop timeout); its
      // message says so. Anything else is a rendezvous error (e.g. the join timed out).
      return abandon(e->code == ErrorCode::kPeerGone ? e->message
                                                     : "rendezvous error: " + e->message);
    }
  }

  void on_round(const rendezvous::membership::RoundComplete& r) {
    round_ = r.round;
    progress_.stop();
    GroupContext& g = setup_.group;
    g.group_rank = static_cast<int>(r.group_rank);
    g.group_world_size = static_cast<int>(r.group_world_size);
    g.global_rank_base = static_cast<int>(r.rank_offset);
    g.world_size = static_cast<int>(r.world_size);
    // Static backend: the workers' store is the daemon on --master-addr:--master-port.
    g.master_addr = rdzv_.node_rank ? rdzv_.host : r.store_addr;
    g.master_port = rdzv_.node_rank ? rdzv_.port : r.store_port;
    restart_count_ = static_cast<int>(r.restart_count);
    spdlog::info(
        "round {}: group rank {} of {}, ranks {}..{} of {}, restart {}, worker store {}:{}",
        r.round, r.group_rank, r.group_world_size, r.rank_offset,
        r.rank_offset + r.local_world_size - 1, r.world_size, r.restart_count, g.master_addr,
        g.master_port);
    // A new round must never see an earlier round's keys (a restart caused by a joining node
    // keeps the restart count, hence the /worker/attempt_<n> prefix): the store host serves
    // every round after its first from a fresh store on the same port.
    if (r.group_rank == 0 && store_ != nullptr) {
      if (store_used_) {
        store_->stop();
        retired_stores_.push_back(std::move(store_));
        if (!start_worker_store()) return finish(1, "cannot restart the worker store");
      }
      store_used_ = true;
    }
    SupervisorOptions options{config_.nproc_per_node, 0, config_.shutdown_timeout};
    supervisors_.push_back(std::make_unique<Supervisor>(
        io_, launcher_, options,
        [this](int, int local_rank) { return setup_.launch_spec(restart_count_, local_rank); },
        [this](int) {
          router_.end_attempt();
          for (int rank = 0; rank < config_.nproc_per_node; ++rank) {
            std::error_code ignored;
            std::filesystem::remove(setup_.error_file(restart_count_, rank), ignored);
          }
          return router_.begin_attempt(setup_.attempt_dir(restart_count_));
        },
        [this, round = r.round](const Outcome& o) { on_workers_done(round, o); }));
    current_ = supervisors_.back().get();
    current_->start();
  }

  void on_stop(const rendezvous::membership::StopWorkers& s) {
    spdlog::warn("round {}: stopping the workers: {}", s.round, s.detail);
    if (current_ != nullptr && s.round == round_ && current_->phase() != Supervisor::Phase::kDone) {
      current_->interrupt(SIGTERM);
      return;
    }
    if (!reported_.contains(s.round)) {
      reported_.insert(s.round);
      client_->workers_stopped(s.round);
    }
  }

  void on_workers_done(std::uint64_t round, const Outcome& outcome) {
    router_.end_attempt();
    launcher_.kill_strays();
    if (signal_ != 0) {  // this agent is going away; the job goes on without it
      client_->leave(std::string("agent received ") + signal_name(signal_));
      return finish(128 + signal_, {});
    }
    if (lost_) return finish(1, {});  // the daemon is gone: nobody to report to
    if (reported_.contains(round)) return;
    reported_.insert(round);
    switch (outcome.kind) {
      case Outcome::Kind::kSucceeded:
        spdlog::info("round {}: all local workers succeeded; waiting for the other nodes", round);
        client_->report_success(round);
        return;
      case Outcome::Kind::kInterrupted:
        client_->workers_stopped(round);
        return;
      case Outcome::Kind::kFailed:
        client_->report_failure(round, to_wire_failures(outcome, setup_, restart_count_));
        return;
      case Outcome::Kind::kError: {
        rendezvous::membership::Failure f;
        f.exit_code = 1;
        f.rank = static_cast<std::uint32_t>(setup_.group.global_rank_base);
        f.time = std::chrono::time_point_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now());
        f.message = outcome.error.message();
        spdlog::error("{}", outcome.error.message());
        client_->report_failure(round, {f});
        return;
      }
    }
  }

  void on_finished(const rendezvous::membership::JobFinished& f) {
    if (f.root_cause && !config_.job_report_by_launcher) print_root_cause(*f.root_cause, f.reason);
    if (f.exit_code != 0 && !f.root_cause) spdlog::error("job failed: {}", f.reason);
    spdlog::info("job {} finished with exit code {}", setup_.group.run_id, f.exit_code);
    if (current_ != nullptr) current_->kill_now();
    finished_ = true;
    exit_code_ = f.exit_code;
    // A node's closed connection tells the host it got JobFinished (or is gone).
    if (daemon_ == nullptr) return finish(exit_code_, {});
    client_->close();
    daemon_->when_job_drained(setup_.group.run_id, [this] { finish(exit_code_, {}); });
    if (done_) return;
    linger_.expires_after(kFinishLinger);
    linger_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      spdlog::warn(
          "job {}: a node still holds its rendezvous connection {} s after the end; "
          "exiting without waiting for it",
          setup_.group.run_id, std::chrono::seconds(kFinishLinger).count());
      finish(exit_code_, {});
    });
  }

  void print_root_cause(const rendezvous::membership::Failure& f, const std::string& reason) {
    std::string table = format_job_root_cause(program_name(config_.worker_argv), f);
    if (!reason.empty()) table += "job " + setup_.group.run_id + ": " + reason + "\n";
    std::fwrite(table.data(), 1, table.size(), stderr);
    std::fflush(stderr);
  }

  void on_disconnect(const Status& s) {
    if (finished_) return finish(exit_code_, {});
    abandon("lost the rendezvous daemon: " + s.message());
  }

  // This node can no longer take part in the job (the daemon is gone, or it removed this
  // node): stop the workers gracefully, then exit 1 (a signal's code if one came first).
  void abandon(const std::string& why) {
    if (lost_ || done_) return;
    spdlog::error("{}; stopping the workers", why);
    lost_ = true;
    exit_code_ = 1;
    if (current_ != nullptr && current_->phase() != Supervisor::Phase::kDone) {
      current_->interrupt(SIGTERM);
      // on_workers_done() runs when they exited; finish from there.
      return;
    }
    finish(1, {});
  }

  void wait_signal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (on_signal(sig)) wait_signal();
    });
  }

  // A handled signal, or stdin closing (--exit-on-stdin-eof, as SIGTERM). Returns false when
  // the agent finished.
  bool on_signal(int sig) {
    if (done_) return false;
    if (signal_ != 0 && sig == SIGINT) {
      if (current_ != nullptr) current_->kill_now();
      return true;
    }
    spdlog::warn("received {}: stopping the workers and leaving the job", signal_name(sig));
    signal_ = sig;
    if (current_ != nullptr && current_->phase() != Supervisor::Phase::kDone) {
      current_->interrupt(sig);
      return true;
    }
    if (client_ && client_->is_open()) client_->leave("agent received " + signal_name(sig));
    finish(128 + sig, {});
    return false;
  }

  void finish(int code, const std::string& message) {
    if (done_) return;
    if (lost_ && signal_ == 0) code = 1;
    done_ = true;
    if (!message.empty()) spdlog::error("{}", message);
    exit_code_ = code;
    if (current_ != nullptr) current_->kill_now();
    launcher_.kill_strays();
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    stdin_.cancel();
    linger_.cancel();
    rejoin_timer_.cancel();
    progress_.stop();
    if (client_ && client_->is_open()) client_->close();
    if (store_) store_->stop();
    if (daemon_) daemon_->stop();
    io_.stop();
  }

  const AgentConfig& config_;
  RunSetup& setup_;
  proc::DeathWatch& death_watch_;
  RdzvSettings rdzv_;
  asio::io_context io_;
  OutputRouter router_;
  proc::Spawner launcher_;
  asio::signal_set signals_;
  StdinWatch stdin_;
  asio::steady_timer linger_;
  asio::steady_timer rejoin_timer_;  // static rank > 0: pause before joining again
  JoinProgress progress_;            // until the first round: how far the rendezvous is
  std::unique_ptr<rendezvous::Server> daemon_;
  std::string daemon_connect_host_;  // static node rank 0: where its own client connects
  std::chrono::steady_clock::time_point connect_deadline_;  // static rank > 0: retry until
  std::unique_ptr<rendezvous::Server> store_;
  std::vector<std::unique_ptr<rendezvous::Server>> retired_stores_;
  std::uint16_t store_port_ = 0;
  bool store_used_ = false;
  std::shared_ptr<rendezvous::RdzvClient> client_;
  // Supervisors of past rounds stay alive: their timers may still hold callbacks.
  std::vector<std::unique_ptr<Supervisor>> supervisors_;
  Supervisor* current_ = nullptr;
  std::set<std::uint64_t> reported_;
  std::uint64_t round_ = 0;
  int restart_count_ = 0;
  bool finished_ = false;
  bool lost_ = false;
  bool done_ = false;
  int signal_ = 0;
  int exit_code_ = 1;
};

}  // namespace

int run_multinode(const AgentConfig& config, RunSetup& setup, proc::DeathWatch& death_watch) {
  // Bad multi-node input is reported as the launcher reports bad input: one line, exit 2.
  auto bad_input = [](const std::string& message) {
    std::fprintf(stderr, "ddprun: error: %s\n", message.c_str());
    return 2;
  };
  auto rdzv = rdzv_settings(config);
  if (!rdzv) return bad_input(rdzv.status().message());
  Node node(config, setup, death_watch, std::move(rdzv).value());
  return node.run();
}

}  // namespace ddp::agent
