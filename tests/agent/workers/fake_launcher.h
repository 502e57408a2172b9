// A proc::ProcessLauncher that starts nothing: it records spawns and signals in one ordered
// log so tests can check what the supervisor did and in which order, and lets the test
// make "processes" exit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proc/process_launcher.h"

namespace ddp::agent::testing {

class FakeLauncher final : public proc::ProcessLauncher {
 public:
  Result<pid_t> spawn(int id, const proc::LaunchSpec& spec) override {
    if (fail_spawn_of == id) return io_error("cannot run 'nope': No such file or directory");
    pid_t pid = next_pid_++;
    live[id] = pid;
    specs[id] = spec;
    log.push_back("spawn " + std::to_string(id));
    return pid;
  }
  void close_stdin(int id) override { log.push_back("close stdin " + std::to_string(id)); }
  void signal_group(int id, int signal) override {
    log.push_back("signal " + std::to_string(id) + " " + std::to_string(signal));
  }
  void release(int id) override {
    live.erase(id);
    log.push_back("release " + std::to_string(id));
  }

  void kill_strays() override { log.push_back("kill strays"); }

  int fail_spawn_of = -1;
  std::map<int, pid_t> live;
  std::map<int, proc::LaunchSpec> specs;
  std::vector<std::string> log;

 private:
  pid_t next_pid_ = 1000;
};

}  // namespace ddp::agent::testing
