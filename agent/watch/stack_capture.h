// Takes the stacks of a worker group's processes, for a hang report, before anything is killed.
//  - Python workers: each was started with a stack channel (a FIFO, DDPRUN_STACK_FILE) and a
//    startup hook (python_stack_hook.h) that registers faulthandler for DDPRUN_STACK_SIGNAL; the
//    agent sends that signal and faulthandler writes every thread's traceback into the channel
//    from the signal handler, even while the worker is blocked in native code. The dump has no
//    end marker, so a dump is taken as complete 25 ms after its last byte when that byte ends a
//    line (the handler writes it in one burst); a worker that writes nothing within 3 s gets a
//    note instead.
//  - Native workers: `gdb -batch -p PID -ex "thread apply all bt"` through `run_gdb`, where gdb
//    is installed (else a note saying no stack could be taken); its exit ends the capture.
//
// Threading: the io_context's thread; `done` runs there once, never inside capture(). Destroying
// the capture drops one in progress: `done` is not called and no handler touches it after.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/watch/fifo_reader.h"
#include "common/lifetime.h"
#include "common/status.h"

namespace ddp::agent {

// Adds the source line under each `  File "PATH", line N in FUNC` line of a faulthandler dump
// (faulthandler prints none), read from PATH when it is readable; other lines pass unchanged.
std::string with_source_lines(const std::string& traceback);

struct StackTarget {
  int local_rank = 0;
  int rank = 0;  // global rank, for messages
  pid_t pid = 0;
  bool python = false;
};

struct CapturedStack {
  StackTarget target;
  std::string text;  // the traceback / backtrace; empty when none could be taken
  std::string note;  // how it was taken, or why there is none
};

class StackCapture {
 public:
  // Runs gdb on `pid` and gives its output (or an error: gdb missing, timed out).
  using RunGdb = std::function<void(pid_t pid, std::function<void(Result<std::string>)> done)>;
  StackCapture(boost::asio::io_context& io, int python_signal, RunGdb run_gdb);
  StackCapture(const StackCapture&) = delete;
  StackCapture& operator=(const StackCapture&) = delete;

  // Creates local rank `local_rank`'s Python stack channel at `path` (before the worker starts).
  Status open_python_channel(int local_rank, const std::filesystem::path& path);
  void capture(std::vector<StackTarget> targets,
               std::function<void(std::vector<CapturedStack>)> done);

 private:
  struct Pending;
  void python_bytes(int local_rank, std::string_view bytes);
  void finish_one(int local_rank);

  boost::asio::io_context& io_;
  int python_signal_;
  RunGdb run_gdb_;
  std::map<int, std::unique_ptr<FifoReader>> channels_;  // by local rank
  std::map<int, std::string> received_;                  // what each channel brought so far
  std::shared_ptr<Pending> pending_;                     // the capture in progress
  Lifetime life_;  // last: handlers queued when this dies touch nothing
};

}  // namespace ddp::agent
