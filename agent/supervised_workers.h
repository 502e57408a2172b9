// The real Workers (workers.h): one Supervisor per round over the process launcher, the
// workers' output routed to the console and the log directory (output.h), and their failures
// turned into the rendezvous's vocabulary (failure_wire.h). Each round's group runs as attempt
// `restart_count` (attempt_<n>/ log directory, TORCHELASTIC_RESTART_COUNT), with the ranks and
// the workers' store of the round.
//
// Threading: the agent's io_context thread. Owns the launcher (the process's one spawner).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "agent/config.h"
#include "agent/output.h"
#include "agent/run_setup.h"
#include "agent/supervisor.h"
#include "agent/workers.h"
#include "proc/death_watch.h"
#include "proc/posix_process_launcher.h"

namespace ddp::agent {

class SupervisedWorkers final : public Workers, private proc::ProcessObserver {
 public:
  // `setup` is updated with each round's ranks and store; it and `config` must outlive this.
  SupervisedWorkers(boost::asio::io_context& io, const AgentConfig& config, RunSetup& setup,
                    proc::DeathWatch* death_watch);
  ~SupervisedWorkers() override;

  void set_events(WorkerEvents& events) override { events_ = &events; }
  void start(const Round& round) override;
  void stop(int signal) override;
  void kill_now() override;

 private:
  void on_output(int id, proc::StreamId stream, std::string_view bytes) override;
  void on_output_end(int id, proc::StreamId stream) override;
  void on_exit(int id, proc::ExitStatus status) override;
  void on_group_done(const Outcome& outcome);
  bool live() const;

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  RunSetup& setup_;
  OutputRouter router_;
  proc::PosixProcessLauncher launcher_;
  WorkerEvents* events_ = nullptr;
  int attempt_ = 0;
  // Groups of past rounds stay alive: their timers may still hold callbacks.
  std::vector<std::unique_ptr<Supervisor>> groups_;
};

}  // namespace ddp::agent
