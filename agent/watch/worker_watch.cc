#include "agent/watch/worker_watch.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstring>

#include "agent/workers/python_stack_hook.h"
#include "agent/workers/worker_args.h"

namespace ddp::agent {
namespace {

int stack_signal() { return SIGRTMIN + 3; }

// The FIFOs live in memory where the machine offers it: $XDG_RUNTIME_DIR, else /dev/shm (a
// FIFO on a journaled disk file system costs several times more to create), else $TMPDIR.
Result<std::filesystem::path> make_runtime_dir() {
  std::vector<std::string> bases;
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && *runtime != '\0') bases.emplace_back(runtime);
  bases.emplace_back("/dev/shm");
  const char* tmp = std::getenv("TMPDIR");
  if (tmp != nullptr && *tmp != '\0') bases.emplace_back(tmp);
  bases.emplace_back("/tmp");
  std::string last_error;
  for (const auto& base : bases) {
    std::string pattern = base + "/ddprun-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) return std::filesystem::path(pattern);
    last_error = pattern + ": " + std::strerror(errno);
  }
  return io_error("cannot create a runtime directory (" + last_error +
                  "); set TMPDIR to a writable directory");
}

}  // namespace

WorkerWatch::WorkerWatch(boost::asio::io_context& io, const AgentConfig& config,
                         StackCapture::RunGdb run_gdb, FindWorker find_worker,
                         std::function<void(HangReport)> on_hung, std::function<void()> on_step)
    : io_(io),
      config_(config),
      run_gdb_(std::move(run_gdb)),
      find_worker_(std::move(find_worker)),
      on_hung_(std::move(on_hung)),
      on_step_(std::move(on_step)),
      python_(config.python_workers) {}

WorkerWatch::~WorkerWatch() {
  watch_.reset();
  stacks_capture_.reset();
  timer_server_.reset();
  if (!runtime_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(runtime_dir_, ignored);
  }
}

Status WorkerWatch::start(EnvMap& base_env) {
  auto dir = make_runtime_dir();
  if (!dir) return dir.status();
  runtime_dir_ = std::move(dir).value();
  auto timer_enabled = base_env.find("TORCHELASTIC_ENABLE_FILE_TIMER");
  const bool timer = timer_enabled != base_env.end() && timer_enabled->second == "1";
  stacks_ = config_.hang_timeout.count() > 0 || timer;
  if (timer) {
    auto given = base_env.find("TORCHELASTIC_TIMER_FILE");
    std::filesystem::path path = runtime_dir_ / "timer";
    if (given != base_env.end() && !given->second.empty()) path = given->second;
    auto server = FileTimerServer::open(io_, path, [this](const TimerRequest& t) { on_timer(t); });
    if (!server) return server.status();
    timer_server_ = std::move(server).value();
    base_env["TORCHELASTIC_TIMER_FILE"] = path.string();
    spdlog::info("serving the file timer at {}", path.string());
  }
  if (python_) {  // the stack part acts only with DDPRUN_STACK_*; the store part always
    const auto hook = runtime_dir_ / "python";
    std::error_code ec;
    std::filesystem::create_directory(hook, ec);
    if (ec) return io_error("cannot create " + hook.string() + ": " + ec.message());
    if (Status s = write_python_stack_hook(hook); !s) return s;
    auto old = base_env.find("PYTHONPATH");
    base_env["PYTHONPATH"] =
        hook.string() + (old != base_env.end() && !old->second.empty() ? ":" + old->second : "");
  }
  return Status::ok();
}

Status WorkerWatch::begin_group(std::uint64_t round, int nproc, int rank_base) {
  round_ = round;
  watch_ = std::make_unique<HangWatch>(
      io_, HangLimits{config_.hang_timeout, config_.hang_first_beat_timeout}, rank_base,
      [this](HangReport r) { on_hung_(std::move(r)); },
      [this] {
        if (on_step_) on_step_();
      });
  stacks_capture_ = std::make_unique<StackCapture>(io_, stack_signal(), run_gdb_);
  if (timer_server_) timer_server_->clear_all();
  const std::string tag = std::to_string(round) + "-";
  for (int r = 0; r < nproc; ++r) {
    if (Status s = watch_->open_channel(r, runtime_dir_ / ("beat-" + tag + std::to_string(r)));
        !s) {
      return s;
    }
    if (stacks_ && python_) {
      if (Status s = stacks_capture_->open_python_channel(
              r, runtime_dir_ / ("stack-" + tag + std::to_string(r)));
          !s) {
        return s;
      }
    }
  }
  return Status::ok();
}

std::vector<std::string> WorkerWatch::worker_env(int local_rank) const {
  const std::string tag = std::to_string(round_) + "-" + std::to_string(local_rank);
  std::vector<std::string> env{"DDPRUN_HEARTBEAT_FILE=" +
                               (runtime_dir_ / ("beat-" + tag)).string()};
  if (stacks_ && python_) {
    env.push_back("DDPRUN_STACK_FILE=" + (runtime_dir_ / ("stack-" + tag)).string());
    env.push_back("DDPRUN_STACK_SIGNAL=" + std::to_string(stack_signal()));
  }
  return env;
}

int WorkerWatch::worker_stack_signal() const { return stacks_ && python_ ? stack_signal() : 0; }

void WorkerWatch::group_started() {
  if (watch_) watch_->start();
}

std::optional<HangReport> WorkerWatch::judge_beside_peer() {
  return watch_ ? watch_->judge_beside_peer() : std::nullopt;
}

rendezvous::membership::Progress WorkerWatch::step_report() const {
  return watch_ ? watch_->step_report(round_) : rendezvous::membership::Progress{round_, {}, {}};
}

void WorkerWatch::end_group() {
  if (watch_) watch_->stop();
  if (timer_server_) timer_server_->clear_all();
}

void WorkerWatch::capture(std::vector<StackTarget> targets,
                          std::function<void(std::vector<CapturedStack>)> done) {
  for (auto& t : targets) t.python = python_ && stacks_;
  stacks_capture_->capture(std::move(targets), std::move(done));
}

void WorkerWatch::on_timer(const TimerRequest& expired) {
  auto rank = find_worker_(expired.pid);
  if (!rank) {
    spdlog::warn("timer '{}' of pid {} expired, but that is no worker of this agent: ignored",
                 expired.scope_id, expired.pid);
    return;
  }
  HangReport report;
  report.kind = HangReport::Kind::kTimer;
  report.local_ranks = {*rank};
  report.descriptions = {"timer '" + expired.scope_id + "' of pid " + std::to_string(expired.pid) +
                         " expired"};
  report.stalled = {std::chrono::system_clock::time_point(
      std::chrono::microseconds(static_cast<std::int64_t>(expired.expiration_time * 1e6)))};
  report.pid = expired.pid;
  report.scope = expired.scope_id;
  report.signal = expired.signal;
  spdlog::error("{} (local rank {})", report.descriptions.front(), *rank);
  on_hung_(std::move(report));
}

}  // namespace ddp::agent
