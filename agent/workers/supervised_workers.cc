#include "agent/workers/supervised_workers.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/report/failure_wire.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
constexpr auto kGdbLimit = 30s;      // a debugger that takes longer is killed
constexpr int kStackHeadLines = 12;  // of the culprit's stack, in the root-cause table
// A worker SIGKILLed and still alive this much later is given up (docs/unkillable.md). Long
// enough for the exit of a large process (its memory freed, a GPU driver's teardown); short
// enough that the default --shutdown-timeout (30 s) plus this stays within the job's default
// close_timeout (60 s), so the node's report of the stuck worker reaches the job in time.
constexpr std::chrono::milliseconds kKillTimeout = 15s;

// The program's path on $PATH, or empty.
std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

std::string first_lines(const std::string& text, int lines) {
  std::size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos == 0 && i == 0 ? 0 : pos + 1);
  }
  return pos == std::string::npos ? text : text.substr(0, pos);
}

// gdb's attach and detach messages are not the stack.
std::string without_gdb_chatter(const std::string& output) {
  std::istringstream in(output);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("[New LWP") || line.starts_with("[Thread debugging") ||
        line.starts_with("Using host libthread_db") || line.starts_with("[Inferior") ||
        line.ends_with(": No such file or directory.")) {
      continue;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

SupervisedWorkers::SupervisedWorkers(boost::asio::io_context& io, const AgentConfig& config,
                                     RunSetup& setup, proc::DeathWatch* death_watch,
                                     EventLog* event_log)
    : io_(io),
      config_(config),
      setup_(setup),
      router_(config, config.log_dir.has_value()),
      launcher_(io, *this, {.death_watch = death_watch, .adopt_orphans = true}),
      watch_(
          io, config,
          on_path("gdb").empty() ? StackCapture::RunGdb{}
                                 : StackCapture::RunGdb([this](pid_t pid, auto done) {
                                     run_gdb(pid, std::move(done));
                                   }),
          [this](pid_t pid) { return worker_of(pid); },
          [this](HangReport report) {
            if (events_ != nullptr) events_->on_workers_hung(report);
          },
          [this] {
            if (events_ != nullptr) events_->on_workers_progress();
          }),
      event_log_(event_log) {}

SupervisedWorkers::~SupervisedWorkers() { launcher_.kill_strays(); }

Status SupervisedWorkers::start_watch() { return watch_.start(setup_.base_env); }

void SupervisedWorkers::start(const Round& round) {
  GroupContext& g = setup_.group;
  g.group_rank = round.group_rank;
  g.group_world_size = round.group_world_size;
  g.global_rank_base = round.rank_offset;
  g.world_size = round.world_size;
  g.master_addr = round.store_addr;
  g.master_port = round.store_port;
  attempt_ = round.restart_count;
  const Status channels =
      watch_.begin_group(round.round, config_.nproc_per_node, round.rank_offset);
  SupervisorOptions options{.nproc = config_.nproc_per_node,
                            .shutdown_timeout = config_.shutdown_timeout,
                            .kill_timeout = kKillTimeout,
                            .uninterruptible_timeout = config_.uninterruptible_state_timeout};
  groups_.push_back(std::make_unique<Supervisor>(
      io_, launcher_, options,
      [this](int attempt, int local_rank) {
        proc::LaunchSpec spec = setup_.launch_spec(attempt, local_rank);
        for (auto& entry : watch_.worker_env(local_rank)) spec.env.push_back(std::move(entry));
        spec.ignored_signal = watch_.worker_stack_signal();
        return spec;
      },
      [this, channels](int attempt) {
        if (!channels) return channels;
        router_.end_attempt();
        // A reused --log-dir may hold an error file of an earlier run: never report it.
        for (int rank = 0; rank < config_.nproc_per_node; ++rank) {
          std::error_code ignored;
          std::filesystem::remove(setup_.error_file(attempt, rank), ignored);
        }
        return router_.begin_attempt(setup_.attempt_dir(attempt), setup_.group.global_rank_base);
      },
      [this](const Outcome& outcome) { on_group_done(outcome); }));
  groups_.back()->start(attempt_);
  if (event_log_ != nullptr) {
    std::vector<StartedWorker> started;
    const Supervisor& group = *groups_.back();
    for (int r = 0; r < group.size(); ++r) {
      if (group.pid(r) != 0) started.push_back({r, round.rank_offset + r, group.pid(r)});
    }
    if (!started.empty()) event_log_->workers_started(attempt_, started);
  }
  if (live()) watch_.group_started();
}

bool SupervisedWorkers::live() const {
  return !groups_.empty() && groups_.back()->phase() != Supervisor::Phase::kDone;
}

void SupervisedWorkers::stop(int signal) {
  if (live()) groups_.back()->interrupt(signal);
}

void SupervisedWorkers::kill_now() {
  if (live()) groups_.back()->kill_now();
  launcher_.kill_strays();
}

std::optional<int> SupervisedWorkers::worker_of(pid_t pid) const {
  if (!live()) return std::nullopt;
  const Supervisor& group = *groups_.back();
  // The pid itself, or up to 32 ancestors (a worker's dataloader, a shell's child).
  for (int depth = 0; depth < 32 && pid > 1; ++depth) {
    for (int r = 0; r < group.size(); ++r) {
      if (group.pid(r) == pid && group.live(r)) return r;
    }
    const auto state = proc::read_process_state(pid);
    pid = state ? state->ppid : 0;
  }
  return std::nullopt;
}

void SupervisedWorkers::abort_hung(const HangReport& report) {
  if (!live()) return;
  Supervisor* group = groups_.back().get();
  std::vector<StackTarget> targets;
  for (int r = 0; r < group->size(); ++r) {
    if (group->live(r)) {
      targets.push_back({r, setup_.group.global_rank_base + r, group->pid(r), false});
    }
  }
  spdlog::warn("taking the stacks of {} worker(s) before stopping the group", targets.size());
  watch_.capture(std::move(targets), [this, group, report](std::vector<CapturedStack> stacks) {
    if (!live() || groups_.back().get() != group) return;  // the group ended meanwhile
    act_on_hang(report, std::move(stacks));
  });
}

std::optional<HangReport> SupervisedWorkers::judge_hang_elsewhere() {
  if (!live()) return std::nullopt;
  return watch_.judge_beside_peer();
}

void SupervisedWorkers::act_on_hang(const HangReport& report, std::vector<CapturedStack> stacks) {
  Supervisor& group = *groups_.back();
  std::map<int, std::string> stack_of;
  for (const auto& s : stacks) {
    const int r = s.target.local_rank;
    std::string header = "stack of rank " + std::to_string(s.target.rank) + " (local rank " +
                         std::to_string(r) + ", pid " + std::to_string(s.target.pid) +
                         "): " + s.note + "\n";
    std::string body = header + s.text + (s.text.empty() || s.text.back() == '\n' ? "" : "\n");
    std::fwrite(body.data(), 1, body.size(), stderr);
    std::fflush(stderr);
    const auto dir = setup_.attempt_dir(attempt_) / std::to_string(r);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream(dir / "stack.txt", std::ios::binary) << body;
    stack_of[r] = s.text.empty() ? s.note : s.text;
  }
  for (std::size_t i = 0; i < report.local_ranks.size(); ++i) {
    const int r = report.local_ranks[i];
    HangNote note;
    note.summary = "hung: " + report.descriptions[i];
    note.stack_head = first_lines(stack_of[r], kStackHeadLines);
    note.since = i < report.stalled.size() ? report.stalled[i] : std::chrono::system_clock::now();
    if (report.kind == HangReport::Kind::kSilent) {
      note.exit_code = kHangExitCode;
      note.silent = true;
      if (i < report.steps.size()) note.step = report.steps[i];
      group.mark_hung(r, std::move(note));
      group.kill(r);
      continue;
    }
    // torchrun's file timer: the pid it names gets the signal it asked for (a worker's
    // SIGKILL goes to its group, the wait for its exit bounded).
    const bool worker = group.pid(r) == report.pid;
    if (worker) group.mark_hung(r, std::move(note));
    if (worker && report.signal == SIGKILL) {
      group.kill(r);
    } else if (::kill(report.pid, report.signal) != 0) {
      spdlog::warn("cannot send signal {} to pid {}: it is gone", report.signal, report.pid);
    }
  }
}

void SupervisedWorkers::run_gdb(pid_t pid, std::function<void(Result<std::string>)> done) {
  const int id = next_tool_++;
  proc::LaunchSpec spec;
  spec.argv = {"gdb", "-nx",
               "-q",  "-batch",
               "-p",  std::to_string(pid),
               "-ex", "thread apply all -ascending bt"};  // the main thread first
  for (const auto& [key, value] : setup_.base_env) spec.env.push_back(key + "=" + value);
  auto started = launcher_.spawn(id, spec);
  if (!started) {
    done(started.status());
    return;
  }
  tools_[id] = ToolRun{{}, std::move(done)};
  auto limit = std::make_shared<boost::asio::steady_timer>(io_, kGdbLimit);
  limit->async_wait([this, id, limit](const boost::system::error_code& ec) {
    if (!ec && tools_.contains(id)) launcher_.signal_group(id, SIGKILL);
  });
}

void SupervisedWorkers::on_group_done(const Outcome& outcome) {
  watch_.end_group();
  router_.end_attempt();
  launcher_.kill_strays();
  WorkersResult result{outcome, {}};
  if (outcome.kind == Outcome::Kind::kFailed) {
    result.failures = to_wire_failures(outcome, setup_, attempt_);
    // Diagnoses for as many failures as the job keeps (a report stays a small frame).
    for (std::size_t i = 0; i < result.failures.size(); ++i) {
      auto& f = result.failures[i];
      if (i < rendezvous::membership::kDiagnosedFailures) {
        f.diagnosis.last_lines = router_.last_lines(static_cast<int>(f.local_rank));
      } else {
        f.diagnosis = {};
      }
    }
  } else if (outcome.kind == Outcome::Kind::kError) {
    rendezvous::membership::Failure f;
    f.exit_code = 1;
    f.rank = static_cast<std::uint32_t>(setup_.group.global_rank_base);
    f.time =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
    f.message = outcome.error.message();
    result.failures.push_back(std::move(f));
  }
  // Posted: a group that could not start ends inside start(), and workers.h promises never.
  boost::asio::post(io_, [this, result = std::move(result)] {
    if (events_ != nullptr) events_->on_workers_done(result);
  });
}

void SupervisedWorkers::on_output(int id, proc::StreamId stream, std::string_view bytes) {
  if (id >= kToolIds) {
    if (auto it = tools_.find(id); it != tools_.end()) it->second.output.append(bytes);
    return;
  }
  router_.write(id, stream, bytes);
}

void SupervisedWorkers::on_output_end(int id, proc::StreamId stream) {
  if (id < kToolIds) router_.end_stream(id, stream);
}

void SupervisedWorkers::on_exit(int id, proc::ExitStatus status) {
  if (id >= kToolIds) {
    auto it = tools_.find(id);
    if (it == tools_.end()) return;
    ToolRun run = std::move(it->second);
    tools_.erase(it);
    launcher_.release(id);
    if (!status.ok() && run.output.find("Thread") == std::string::npos) {
      run.done(io_error("gdb ended with " + status.describe() + ": " + first_lines(run.output, 3)));
    } else {
      run.done(without_gdb_chatter(run.output));
    }
    return;
  }
  if (groups_.empty()) return;
  Supervisor& group = *groups_.back();
  if (event_log_ != nullptr && group.live(id)) {
    event_log_->worker_exited(id, setup_.group.global_rank_base + id, group.pid(id), status);
  }
  group.on_exit(id, status);
}

}  // namespace ddp::agent
