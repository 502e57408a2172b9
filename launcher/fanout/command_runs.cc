#include "launcher/fanout/command_runs.h"

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "proc/spawner.h"

namespace ddp::launcher::fanout {
namespace {

namespace asio = boost::asio;

// Collects output and exits; stops the io_context when every command is done.
class Collector final : public proc::ProcessObserver {
 public:
  Collector(asio::io_context& io, std::vector<CommandRun>& runs) : io_(io), runs_(runs) {}
  void expect(int count) { pending_ = count; }
  void on_output(int id, proc::StreamId, std::string_view bytes) override {
    runs_[static_cast<std::size_t>(id)].output.append(bytes);
  }
  void on_output_end(int, proc::StreamId) override {}
  void on_exit(int id, proc::ExitStatus status) override {
    runs_[static_cast<std::size_t>(id)].exit = status;
    if (--pending_ <= 0) io_.stop();
  }

 private:
  asio::io_context& io_;
  std::vector<CommandRun>& runs_;
  int pending_ = 0;
};

}  // namespace

proc::LaunchSpec child_spec(const std::vector<std::string>& argv, bool stdin_pipe) {
  proc::LaunchSpec spec{argv, {}};
  spec.stdin_mode = stdin_pipe ? proc::StdinMode::kPipe : proc::StdinMode::kNull;
  spec.group = proc::GroupMode::kNewGroup;
  spec.die_with_parent = false;
  spec.inherit_env = true;
  spec.exec_failure = proc::ExecFailure::kError;
  return spec;
}

std::vector<CommandRun> run_commands(const std::vector<std::vector<std::string>>& commands,
                                     std::chrono::milliseconds deadline) {
  std::vector<CommandRun> runs(commands.size());
  asio::io_context io;
  Collector collector(io, runs);
  proc::Spawner children(io, collector);
  std::vector<bool> started_ok(commands.size(), false);
  int started = 0;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    auto pid = children.spawn(static_cast<int>(i), child_spec(commands[i], false));
    started_ok[i] = static_cast<bool>(pid);
    if (pid) {
      ++started;
    } else {
      runs[i].output = pid.status().message();
    }
  }
  if (started == 0) return runs;
  collector.expect(started);
  asio::steady_timer timer(io, deadline);
  timer.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) io.stop();
  });
  io.run();
  for (std::size_t i = 0; i < commands.size(); ++i) {
    int id = static_cast<int>(i);
    if (runs[i].exit || !started_ok[i]) continue;
    runs[i].timed_out = true;
    children.signal_group(id, SIGKILL);
  }
  // Reap what was killed: its exit arrives on the io_context (bounded: SIGKILL is immediate).
  int killed = 0;
  for (const auto& run : runs) killed += run.timed_out ? 1 : 0;
  if (killed > 0) {
    io.restart();
    collector.expect(killed);
    timer.expires_after(std::chrono::seconds(5));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) io.stop();
    });
    io.run();
    for (auto& run : runs) {
      if (run.timed_out) run.exit.reset();
    }
  }
  return runs;
}

}  // namespace ddp::launcher::fanout
