// The real Workers (workers.h): one Supervisor per round over the process launcher, the
// workers' output routed to the console and the log directory (output.h), their heartbeats,
// timers and stacks watched (worker_watch.h), and their failures turned into the rendezvous's
// vocabulary (failure_wire.h). Each round's group runs as attempt `restart_count`
// (attempt_<n>/ log directory, TORCHELASTIC_RESTART_COUNT), with the ranks and the workers'
// store of the round.
//
// Threading: the agent's io_context thread. Owns the launcher (the process's one spawner).
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <vector>

#include "agent/config.h"
#include "agent/report/event_log.h"
#include "agent/run_setup.h"
#include "agent/watch/worker_watch.h"
#include "agent/workers/output.h"
#include "agent/workers/supervisor.h"
#include "agent/workers/workers.h"
#include "proc/death_watch.h"
#include "proc/spawner.h"

namespace ddp::agent {

class SupervisedWorkers final : public Workers, private proc::ProcessObserver {
 public:
  // `setup` is updated with each round's ranks and store; it and `config` must outlive this.
  // Each group's start (pids and ranks) and each worker's exit go to `event_log` when given
  // (not owned; must outlive this).
  SupervisedWorkers(boost::asio::io_context& io, const AgentConfig& config, RunSetup& setup,
                    proc::DeathWatch* death_watch, EventLog* event_log = nullptr);
  ~SupervisedWorkers() override;

  // Prepares the watch (runtime directory, timer file, stack hook). Errors: kIo.
  Status start_watch();
  void set_events(WorkerEvents& events) override { events_ = &events; }
  void start(const Round& round) override;
  void stop(int signal) override;
  void kill_now() override;
  void abort_hung(const HangReport& report) override;
  std::optional<HangReport> judge_hang_elsewhere() override;
  rendezvous::membership::Progress progress() const override { return watch_.step_report(); }

 private:
  // proc::ProcessObserver: workers (ids = local ranks) and debugger runs (ids >= kToolIds).
  void on_output(int id, proc::StreamId stream, std::string_view bytes) override;
  void on_output_end(int id, proc::StreamId stream) override;
  void on_exit(int id, proc::ExitStatus status) override;
  void on_group_done(const Outcome& outcome);
  bool live() const;
  std::optional<int> worker_of(pid_t pid) const;
  void run_gdb(pid_t pid, std::function<void(Result<std::string>)> done);
  void act_on_hang(const HangReport& report, std::vector<CapturedStack> stacks);

  struct ToolRun {
    std::string output;
    std::function<void(Result<std::string>)> done;
  };
  static constexpr int kToolIds = 1 << 20;

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  RunSetup& setup_;
  OutputRouter router_;
  proc::Spawner launcher_;
  WorkerWatch watch_;
  WorkerEvents* events_ = nullptr;
  EventLog* event_log_;
  int attempt_ = 0;
  std::map<int, ToolRun> tools_;  // debugger runs by launcher id
  int next_tool_ = kToolIds;
  // Groups of past rounds stay alive: their timers may still hold callbacks.
  std::vector<std::unique_ptr<Supervisor>> groups_;
};

}  // namespace ddp::agent
