// What the agent watches in its workers besides their exits (docs/hangs.md):
//  - a heartbeat channel per worker (DDPRUN_HEARTBEAT_FILE) and, with --hang-timeout, the
//    judgement of silent workers (hang_watch.h);
//  - torchrun's file timer when TORCHELASTIC_ENABLE_FILE_TIMER=1 (file_timer_server.h), at
//    TORCHELASTIC_TIMER_FILE or a fresh path exported to the workers;
//  - their stacks on demand (stack_capture.h): Python workers always get the startup hook
//    (python_stack_hook.h, on PYTHONPATH); with hang detection or the file timer also a stack
//    channel and DDPRUN_STACK_SIGNAL, which arm its faulthandler part.
// The FIFOs and the hook live in a private runtime directory ($XDG_RUNTIME_DIR, /dev/shm,
// $TMPDIR or /tmp), removed at the end.
//
// Threading: the agent's io_context thread; on_hung runs there.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/watch/file_timer_server.h"
#include "agent/watch/hang_watch.h"
#include "agent/watch/stack_capture.h"
#include "agent/workers/worker_env.h"
#include "agent/workers/workers.h"

namespace ddp::agent {

class WorkerWatch {
 public:
  // Maps a pid a timer names to the local rank of the live worker it is or descends from.
  using FindWorker = std::function<std::optional<int>(pid_t pid)>;
  // `on_step`: a worker of the current group beat a new step (HangWatch).
  WorkerWatch(boost::asio::io_context& io, const AgentConfig& config, StackCapture::RunGdb run_gdb,
              FindWorker find_worker, std::function<void(HangReport)> on_hung,
              std::function<void()> on_step = {});
  ~WorkerWatch();
  WorkerWatch(const WorkerWatch&) = delete;
  WorkerWatch& operator=(const WorkerWatch&) = delete;

  // Creates the runtime directory, the hook and the timer server; adds what every worker's
  // environment needs (TORCHELASTIC_TIMER_FILE, PYTHONPATH) to `base_env`. Errors: kIo.
  Status start(EnvMap& base_env);
  // A new group of `nproc` workers (local rank 0 is global rank `rank_base`): fresh channels.
  Status begin_group(std::uint64_t round, int nproc, int rank_base);
  // The variables of local rank `local_rank` of the current group ("KEY=VALUE").
  std::vector<std::string> worker_env(int local_rank) const;
  // The signal the workers start with ignored (proc::LaunchSpec::ignored_signal): the stack
  // signal when Python workers get the stack hook, else 0.
  int worker_stack_signal() const;
  // The group's workers have started / the group ended.
  void group_started();
  void end_group();
  // A worker on another node was judged hung: HangWatch::judge_beside_peer of this group.
  std::optional<HangReport> judge_beside_peer();
  // The current (or last) group's steps: HangWatch::step_report.
  rendezvous::membership::Progress step_report() const;
  // Takes the stacks of `targets` (workers of the current group).
  void capture(std::vector<StackTarget> targets,
               std::function<void(std::vector<CapturedStack>)> done);

 private:
  void on_timer(const TimerRequest& expired);

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  StackCapture::RunGdb run_gdb_;
  FindWorker find_worker_;
  std::function<void(HangReport)> on_hung_;
  std::function<void()> on_step_;
  bool python_ = false;  // the workers run under Python (the stack hook applies)
  bool stacks_ = false;  // hang detection or the file timer: stacks will be wanted
  std::filesystem::path runtime_dir_;
  std::unique_ptr<FileTimerServer> timer_server_;
  std::uint64_t round_ = 0;
  std::unique_ptr<HangWatch> watch_;
  std::unique_ptr<StackCapture> stacks_capture_;
};

}  // namespace ddp::agent
