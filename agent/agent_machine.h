// The agent's policy: what one node does about rounds, worker exits, pushes from the job,
// signals and the end of the job. Every decision of the agent is here, in one transition
// function per event; the effects go through mechanisms behind small interfaces: the
// rendezvous backend (rendezvous_backend.h), this node's workers (workers.h), the clock
// (clock.h) and the end-of-job report (job_report.h). Single node, static, c10d (embedded or
// standalone daemon) and etcd are all this machine over another membership link.
//
// States and what moves the machine between them:
//
//   kJoining --on_round--> kRunning --workers done: report--> kReported --on_round--> kRunning
//      |                     |  on_stop_workers / on_lost / signal: stop workers         |
//      |                     v                                                            |
//      |                  kStopping --workers done--> kReported (or kDone: lost, signal)  |
//      |                                                                                  |
//      +---- on_job_finished (any state but kDone: workers killed, report printed) -------+
//                                   v
//                               kFinishing --backend drained / linger expired--> kDone
//
//   kJoining / kReported / kFinishing + signal: leave the job, kDone with 128 + signal.
//   kJoining / kReported + on_lost: kDone with 1.
//   kFinishing + on_lost: kDone with the job's exit code (the end is known already).
//   kRunning / kStopping + signal: the workers get the signal; once they exited the node
//     leaves the job (which goes on without it): kDone with 128 + signal. A second SIGINT
//     SIGKILLs the workers at once.
//   kRunning + workers hung: kStopping; the workers' stacks are taken and the group ends as
//     failed (its end is reported like any failure; a stop meanwhile does not cut it short);
//     in other states a hang changes nothing.
//   kRunning + on_stop_workers for a worker hung elsewhere: this node's workers silent long
//     enough to have stalled with it are judged hung (as above), so the rendezvous compares
//     steps across nodes; without such workers, a plain stop.
//   kRunning / kStopping + on_lost: workers stopped (SIGTERM, then the shutdown timeout), kDone
//     with 1 (128 + signal when a signal came first).
//   kRunning / kStopping + a new step beaten: a progress report within progress_interval
//     (at most one per interval), and the round's last one before its answer.
//
// Exit code: the job's (the same on every node) after on_job_finished; 128 + signal when a
// signal made this node leave; 1 when the node lost the job.
//
// Threading: the agent's io_context thread; every event method must be called there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "agent/clock.h"
#include "agent/membership/rendezvous_backend.h"
#include "agent/report/event_log.h"
#include "agent/report/job_report.h"
#include "agent/workers/workers.h"

namespace ddp::agent {

class AgentMachine final : public RendezvousEvents, public WorkerEvents {
 public:
  enum class State { kJoining, kRunning, kStopping, kReported, kFinishing, kDone };

  struct Options {
    // After the job finished, how long this node waits for the others to hear of it from
    // this one (a hosted daemon keeps serving them) before it exits anyway.
    std::chrono::milliseconds finish_linger{std::chrono::seconds(5)};
    std::string run_id;  // for messages
    // The event log this machine reports rounds, restarts, failures and its end to; none when
    // null. Not owned; must outlive the machine.
    EventLog* event_log = nullptr;
    // At most one progress report per this interval while workers beat new steps (the
    // rendezvous' keep_alive_interval), and one more before each round's answer.
    std::chrono::milliseconds progress_interval{std::chrono::seconds(1)};
  };
  // `on_done(exit_code)` runs once, when the machine reaches kDone.
  AgentMachine(RendezvousBackend& backend, Workers& workers, Clock& clock, JobReport& report,
               Options options, std::function<void(int exit_code)> on_done);
  AgentMachine(const AgentMachine&) = delete;
  AgentMachine& operator=(const AgentMachine&) = delete;

  // Joins the job.
  void start();
  // A handled signal, or the launching ddprun going away (--exit-on-stdin-eof, as SIGTERM).
  void on_signal(int signal);

  // RendezvousEvents
  void on_round(const Round& round) override;
  void on_stop_workers(std::uint64_t round, const std::string& detail, bool for_hang) override;
  void on_job_finished(const rendezvous::membership::JobFinished& finished) override;
  void on_lost(const Status& why) override;
  void on_straggler(const rendezvous::membership::Straggler& straggler) override;
  // WorkerEvents
  void on_workers_done(const WorkersResult& result) override;
  void on_workers_hung(const HangReport& report) override;
  void on_workers_progress() override;

  State state() const { return state_; }
  int exit_code() const { return exit_code_; }

 private:
  void stop_workers(int signal);
  void report(const WorkersResult& result);
  void send_progress();
  void finish(int exit_code);
  EventLog& events() { return options_.event_log != nullptr ? *options_.event_log : no_log_; }

  RendezvousBackend& backend_;
  Workers& workers_;
  Clock& clock_;
  JobReport& report_;
  Options options_;
  std::function<void(int)> on_done_;
  EventLog no_log_;  // writes nothing: events() without an event log

  State state_ = State::kJoining;
  std::uint64_t round_ = 0;           // the round of the current or last worker group
  int restart_count_ = 0;             // of round_
  std::set<std::uint64_t> answered_;  // rounds this node reported for (one answer each)
  std::optional<WorkersResult> last_result_;
  // Facts that decide what follows the workers' end (kStopping) and the exit code.
  int signal_ = 0;     // the signal this node leaves for; 0 when none
  bool lost_ = false;  // the backend reported on_lost
  std::optional<Clock::TimerId> linger_;
  std::optional<Clock::TimerId> progress_timer_;  // a progress report is due when it fires
  std::optional<rendezvous::membership::Goodput> goodput_;  // the job's, once it finished
  int exit_code_ = 1;
};

}  // namespace ddp::agent
