#include "agent/workers/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/workers/safe_substitute.h"
#include "common/host_identity.h"
#include "proc/write_all.h"

namespace ddp::agent {
namespace {

bool includes(Streams s, proc::StreamId stream) {
  int bit = stream == proc::StreamId::kStdout ? 1 : 2;
  return (static_cast<int>(s) & bit) != 0;
}

int stream_index(proc::StreamId stream) { return stream == proc::StreamId::kStdout ? 0 : 1; }

bool contains_any(std::string_view line, const std::vector<std::string>& filters) {
  for (const auto& f : filters) {
    if (line.find(f) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

struct OutputRouter::Sink {
  StreamRoute route;
  bool filtered = false;  // teed, and its stream has duplicate filters
  proc::StreamId stream = proc::StreamId::kStdout;
  int local_rank = 0;
  std::string prefix;
  int console_fd = -1;
  int file_fd = -1;
  proc::LineSplitter splitter;
};

StreamRoute route_for(const AgentConfig& config, bool log_dir_given, int local_rank,
                      proc::StreamId stream) {
  const bool redirected = includes(config.redirects.for_rank(local_rank), stream);
  const bool teed = includes(config.tee.for_rank(local_rank), stream);
  const bool shown =
      !config.local_ranks_filter.has_value() || config.local_ranks_filter->contains(local_rank);
  StreamRoute route;
  route.file = log_dir_given || redirected || teed;
  route.console = shown && (teed || !redirected);
  return route;
}

std::string output_prefix(const std::string& role, int local_rank) {
  return "[" + role + std::to_string(local_rank) + "]:";
}

std::string output_prefix(const std::string& line_template, const std::string& role, int local_rank,
                          int rank, const std::string& hostname) {
  if (line_template.empty()) return output_prefix(role, local_rank);
  return safe_substitute(line_template, {{"role_name", role},
                                         {"local_rank", std::to_string(local_rank)},
                                         {"rank", std::to_string(rank)},
                                         {"hostname", hostname}});
}

OutputRouter::OutputRouter(const AgentConfig& config, bool log_dir_given, int console_out_fd,
                           int console_err_fd)
    : config_(config), console_fd_{console_out_fd, console_err_fd}, hostname_(host_name()) {
  for (int r = 0; r < config.nproc_per_node; ++r) {
    for (proc::StreamId s : {proc::StreamId::kStdout, proc::StreamId::kStderr}) {
      auto sink = std::make_unique<Sink>();
      sink->route = route_for(config, log_dir_given, r, s);
      sink->stream = s;
      sink->local_rank = r;
      sink->filtered = !filters(s).empty() && includes(config.tee.for_rank(r), s);
      sink->prefix = output_prefix(config.log_line_prefix_template, config.role, r, r, hostname_);
      sink->console_fd = console_fd_[stream_index(s)];
      sinks_.push_back(std::move(sink));
    }
  }
  tails_.resize(static_cast<std::size_t>(std::max(config.nproc_per_node, 0)));
}

OutputRouter::~OutputRouter() { end_attempt(); }

OutputRouter::Sink* OutputRouter::sink(int local_rank, proc::StreamId stream) {
  std::size_t i =
      static_cast<std::size_t>(local_rank) * 2 + (stream == proc::StreamId::kStdout ? 0 : 1);
  return local_rank >= 0 && i < sinks_.size() ? sinks_[i].get() : nullptr;
}

const std::vector<std::string>& OutputRouter::filters(proc::StreamId stream) const {
  return stream == proc::StreamId::kStdout ? config_.duplicate_stdout_filters
                                           : config_.duplicate_stderr_filters;
}

Status OutputRouter::begin_attempt(const std::filesystem::path& attempt_dir, int global_rank_base) {
  end_attempt();
  for (auto& tail : tails_) tail.clear();
  for (int r = 0; r < config_.nproc_per_node; ++r) {
    for (proc::StreamId s : {proc::StreamId::kStdout, proc::StreamId::kStderr}) {
      sink(r, s)->prefix = output_prefix(config_.log_line_prefix_template, config_.role, r,
                                         global_rank_base + r, hostname_);
    }
  }
  for (proc::StreamId s : {proc::StreamId::kStdout, proc::StreamId::kStderr}) {
    if (filters(s).empty()) continue;
    std::error_code ec;
    std::filesystem::create_directories(attempt_dir, ec);
    auto path = attempt_dir /
                (s == proc::StreamId::kStdout ? "filtered_stdout.log" : "filtered_stderr.log");
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return io_error("cannot open log file " + path.string() + ": " + std::strerror(errno));
    }
    filtered_fd_[stream_index(s)] = fd;
  }
  for (int r = 0; r < config_.nproc_per_node; ++r) {
    auto dir = attempt_dir / std::to_string(r);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return io_error("cannot create log directory " + dir.string() + ": " + ec.message());
    for (proc::StreamId s : {proc::StreamId::kStdout, proc::StreamId::kStderr}) {
      Sink* k = sink(r, s);
      if (k == nullptr || !k->route.file) continue;
      auto path = dir / (s == proc::StreamId::kStdout ? "stdout.log" : "stderr.log");
      k->file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (k->file_fd < 0) {
        return io_error("cannot open log file " + path.string() + ": " + std::strerror(errno));
      }
    }
  }
  return Status::ok();
}

void OutputRouter::on_line(const Sink& k, std::string_view line) {
  tails_[static_cast<std::size_t>(k.local_rank)].add(line);
  if (!k.route.console && !k.filtered) return;
  scratch_.assign(k.prefix);
  scratch_.append(line);
  scratch_.push_back('\n');
  // A closed console or full disk: output is best effort, here and in write().
  if (k.route.console) (void)proc::write_all(k.console_fd, scratch_);
  int filtered_fd = filtered_fd_[stream_index(k.stream)];
  if (k.filtered && filtered_fd >= 0 && contains_any(line, filters(k.stream))) {
    (void)proc::write_all(filtered_fd, scratch_);
  }
}

void OutputRouter::write(int local_rank, proc::StreamId stream, std::string_view bytes) {
  Sink* k = sink(local_rank, stream);
  if (k == nullptr) return;
  if (k->file_fd >= 0) (void)proc::write_all(k->file_fd, bytes);
  k->splitter.feed(bytes, [&](std::string_view line) { on_line(*k, line); });
}

void OutputRouter::end_stream(int local_rank, proc::StreamId stream) {
  Sink* k = sink(local_rank, stream);
  if (k == nullptr) return;
  k->splitter.finish([&](std::string_view line) { on_line(*k, line); });
}

std::vector<std::string> OutputRouter::last_lines(int local_rank) const {
  if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= tails_.size()) return {};
  return tails_[static_cast<std::size_t>(local_rank)].lines();
}

void OutputRouter::end_attempt() {
  for (auto& k : sinks_) {
    k->splitter.finish([&](std::string_view line) { on_line(*k, line); });
    if (k->file_fd >= 0) ::close(k->file_fd);
    k->file_fd = -1;
  }
  for (int& fd : filtered_fd_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

}  // namespace ddp::agent
