// Where the agent's event log goes (docs/event_log.md): whole lines, each written at once.
// EventLog (event_log.h) builds the lines; a sink only stores them.
//
// FileEventSink appends to a file opened with O_APPEND, or writes to stderr for "-". Each line
// is one write(2) of the whole line with its '\n', so agents of one node appending to the same
// local file never interleave within a line, and nothing is buffered in this process: a line is
// in the file when write_line() returns. A write that fails (disk full, a closed pipe) is
// reported once on the agent's log and later lines are dropped: the event log never stops a job.
//
// Threading: one thread at a time (the agent's io_context thread).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ddp::agent {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // `line` is one JSON object without its '\n'; the sink adds it.
  virtual void write_line(std::string_view line) = 0;
};

// `path` with every "{host}" replaced by `host`: one file per machine where the nodes of a job
// share a file system (docs/event_log.md). Pure.
std::string expand_event_log_path(const std::string& path, const std::string& host);

class FileEventSink final : public EventSink {
 public:
  // "-": stderr (not closed at the end). Else the file (already expanded) is created when missing
  // (mode 0644) and appended to. Errors: kInvalidArgument naming the path, why it cannot be opened
  // and the fix.
  static Result<std::unique_ptr<FileEventSink>> open(const std::string& path);
  ~FileEventSink() override;
  FileEventSink(const FileEventSink&) = delete;
  FileEventSink& operator=(const FileEventSink&) = delete;

  void write_line(std::string_view line) override;

 private:
  FileEventSink(int fd, bool owned, std::string path)
      : fd_(fd), owned_(owned), path_(std::move(path)) {}

  int fd_;
  bool owned_;
  std::string path_;
  bool failed_ = false;
  std::string scratch_;
};

}  // namespace ddp::agent
