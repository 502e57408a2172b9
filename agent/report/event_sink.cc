#include "agent/report/event_sink.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "proc/write_all.h"

namespace ddp::agent {

std::string expand_event_log_path(const std::string& path, const std::string& host) {
  static constexpr std::string_view kHost = "{host}";
  std::string out;
  std::size_t from = 0;
  for (std::size_t at; (at = path.find(kHost, from)) != std::string::npos;
       from = at + kHost.size()) {
    out.append(path, from, at - from).append(host);
  }
  return out.append(path, from);
}

Result<std::unique_ptr<FileEventSink>> FileEventSink::open(const std::string& path) {
  if (path == "-")
    return std::unique_ptr<FileEventSink>(new FileEventSink(STDERR_FILENO, false, "-"));
  if (path.empty()) {
    return invalid_argument("--event-log is empty; give a file, or - for stderr");
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    std::string fix = "choose a writable file, or - for stderr";
    const auto dir = std::filesystem::path(path).parent_path().lexically_normal();
    if (error == ENOENT && !dir.empty()) {
      fix = "create the directory " + dir.string() + " first, or choose another file";
    } else if (error == EISDIR) {
      fix = "name a file in that directory, e.g. " +
            (std::filesystem::path(path) / "events.jsonl").string();
    }
    return invalid_argument("--event-log " + path + " cannot be opened for appending (" +
                            std::strerror(error) + "); " + fix);
  }
  return std::unique_ptr<FileEventSink>(new FileEventSink(fd, true, path));
}

FileEventSink::~FileEventSink() {
  if (owned_) ::close(fd_);
}

void FileEventSink::write_line(std::string_view line) {
  if (failed_) return;
  scratch_.assign(line);
  scratch_ += '\n';
  if (Status s = proc::write_all(fd_, scratch_); !s) {
    failed_ = true;
    spdlog::error("event log {}: write failed ({}); no more events are written", path_,
                  s.message());
  }
}

}  // namespace ddp::agent
