// run(): wires the pieces of one node's run together: death watch, worker store, log
// directory, output routing, the posix launcher, the supervisor, and the signal handling
// (the one place in ddprun that handles signals), then turns the outcome into an exit code.
#include "agent/agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "agent/error_report.h"
#include "agent/multinode.h"
#include "agent/output.h"
#include "agent/run_setup.h"
#include "agent/supervisor.h"
#include "agent/worker_env.h"
#include "proc/death_watch.h"
#include "proc/spawner.h"
#include "rendezvous/server.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;

// Output goes to the router, exits to the supervisor.
class Observer final : public proc::ProcessObserver {
 public:
  explicit Observer(OutputRouter& router) : router_(router) {}
  void set_supervisor(Supervisor* s) { supervisor_ = s; }
  void on_output(int id, proc::StreamId stream, std::string_view bytes) override {
    router_.write(id, stream, bytes);
  }
  void on_output_end(int id, proc::StreamId stream) override { router_.end_stream(id, stream); }
  void on_exit(int id, proc::ExitStatus status) override {
    if (supervisor_ != nullptr) supervisor_->on_exit(id, status);
  }

 private:
  OutputRouter& router_;
  Supervisor* supervisor_ = nullptr;
};

// Forwards the configured signals to the supervisor; a second SIGINT kills at once.
class SignalForwarder {
 public:
  SignalForwarder(asio::io_context& io, const std::vector<int>& signals, Supervisor& supervisor)
      : set_(io), supervisor_(supervisor) {
    for (int sig : signals) {
      boost::system::error_code ec;
      set_.add(sig, ec);
      if (ec) spdlog::warn("cannot handle signal {}: {}", sig, ec.message());
    }
    wait();
  }
  void cancel() {
    boost::system::error_code ignored;
    set_.cancel(ignored);
  }

 private:
  void wait() {
    set_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGINT && interrupted_) {
        spdlog::warn("second SIGINT: killing the workers now");
        supervisor_.kill_now();
      } else {
        spdlog::warn("received {}: forwarding it to the workers and stopping", signal_name(sig));
        interrupted_ = interrupted_ || sig == SIGINT;
        supervisor_.interrupt(sig);
      }
      wait();
    });
  }
  asio::signal_set set_;
  Supervisor& supervisor_;
  bool interrupted_ = false;
};

// The default temporary log directory is removed when the run left no file in it (no
// redirected output, no error file), so plain runs do not litter $TMPDIR.
void remove_if_empty(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) return;
  }
  if (!ec) std::filesystem::remove_all(dir, ec);
}

int report_failure(const AgentConfig& config, const RunSetup& setup, const Outcome& outcome) {
  std::vector<FailureRecord> records;
  for (const auto& f : outcome.failures) {
    FailureRecord r;
    r.failure = f;
    r.global_rank = setup.group.global_rank_base + f.local_rank;
    r.error_file = setup.error_file(f.attempt, f.local_rank).string();
    r.error = read_error_file(r.error_file);
    records.push_back(std::move(r));
  }
  if (records.empty()) return 1;
  std::size_t root = root_cause_index(records);
  std::string table =
      format_failure_report(program_name(config.worker_argv), setup.hostname, records, root);
  std::fwrite(table.data(), 1, table.size(), stderr);
  std::fflush(stderr);
  return failure_exit_code(records[root]);
}

}  // namespace

int run(const AgentConfig& config) {
  auto setup = prepare_run(config);
  if (!setup) {
    spdlog::error("{}", setup.status().message());
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the agent
  auto death_watch = proc::DeathWatch::start();
  if (!death_watch) {
    spdlog::error("{}", death_watch.status().message());
    return 1;
  }
  if (is_multinode(config)) {
    int code = run_multinode(config, *setup, **death_watch);
    if (!config.log_dir) remove_if_empty(setup->log_dir);
    return code;
  }
  asio::io_context io;

  // The worker store: held from here to the end of the job.
  // Single node: the workers reach it on loopback unless told another address.
  rendezvous::ServerOptions store_options;
  store_options.host = setup->group.master_addr == "127.0.0.1" ? "127.0.0.1" : "";
  store_options.port = config.master_port_given ? config.master_port : 0;
  auto store = rendezvous::Server::start(io, store_options);
  if (!store) {
    spdlog::error("cannot start the worker store: {}", store.status().message());
    if (config.master_port_given) {
      spdlog::error(
          "--master-port {} is taken: pick a free port, or drop --master-port and "
          "ddprun picks one",
          config.master_port);
    }
    return 1;
  }
  setup->group.master_port = (*store)->port();
  (*death_watch)->add_environment_mark("TORCHELASTIC_RUN_ID=" + setup->group.run_id);
  (*death_watch)->add_environment_mark("MASTER_PORT=" + std::to_string(setup->group.master_port));

  if (sets_omp_num_threads(setup->base_env, config.nproc_per_node)) {
    spdlog::warn(
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
        "avoid your system being overloaded, please further tune the variable for optimal "
        "performance in your application as needed.");
  }
  spdlog::info("run id {}, {} worker(s), worker store {}:{}, logs in {}", setup->group.run_id,
               config.nproc_per_node, setup->group.master_addr, setup->group.master_port,
               setup->log_dir.string());

  OutputRouter router(config, config.log_dir.has_value());
  Observer observer(router);
  proc::Spawner launcher(io, observer, {.death_watch = death_watch->get(), .adopt_orphans = true});

  std::optional<Outcome> outcome;
  std::optional<SignalForwarder> signals;
  SupervisorOptions options{config.nproc_per_node, config.max_restarts, config.shutdown_timeout};
  Supervisor supervisor(
      io, launcher, options,
      [&](int attempt, int local_rank) { return setup->launch_spec(attempt, local_rank); },
      [&](int attempt) {
        router.end_attempt();
        // A reused --log-dir may hold an error file of an earlier run: never report it.
        for (int r = 0; r < config.nproc_per_node; ++r) {
          std::error_code ignored;
          std::filesystem::remove(setup->error_file(attempt, r), ignored);
        }
        return router.begin_attempt(setup->attempt_dir(attempt));
      },
      [&](const Outcome& o) {
        outcome = o;
        router.end_attempt();
        launcher.kill_strays();
        if (signals) signals->cancel();
        (*store)->stop();
        io.stop();
      });
  observer.set_supervisor(&supervisor);
  signals.emplace(io, config.signals_to_handle, supervisor);
  supervisor.start();
  if (!outcome) io.run();
  if (!outcome) {
    spdlog::error("internal error: the agent stopped without an outcome");
    return 1;
  }
  int root_cause_code = 1;
  if (outcome->kind == Outcome::Kind::kError) spdlog::error("{}", outcome->error.message());
  if (outcome->kind == Outcome::Kind::kFailed) {
    root_cause_code = report_failure(config, *setup, *outcome);
  }
  if (!config.log_dir) remove_if_empty(setup->log_dir);
  return outcome_exit_code(*outcome, root_cause_code);
}

}  // namespace ddp::agent
