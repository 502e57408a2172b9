// The console of a fan-out: every line a remote agent (ssh client, pbsdsh) writes is printed
// with the node's label first, "[node1] " + line, on the same stream (stdout to stdout, stderr
// to stderr). The agent's own per-rank prefixes stay, so a worker line reads
// "[node1] [default0]:text" (agent/workers/output.h). Partial last lines are printed at EOF.
// Bytes are passed through untouched.
//
// Threading: the io_context's single thread. Console writes are blocking writes.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "proc/line_splitter.h"
#include "proc/process_launcher.h"

namespace ddp::launcher::fanout {

class OutputRelay {
 public:
  explicit OutputRelay(int out_fd = 1, int err_fd = 2) : fd_{out_fd, err_fd} {}

  // The label of child `id`'s lines (its host).
  void set_label(int id, std::string label) { labels_[id] = "[" + label + "] "; }
  void write(int id, proc::StreamId stream, std::string_view bytes);
  void end(int id, proc::StreamId stream);

 private:
  void line(int id, proc::StreamId stream, std::string_view text);

  int fd_[2];
  std::map<int, std::string> labels_;
  std::map<std::pair<int, int>, proc::LineSplitter> splitters_;
  std::string scratch_;
};

}  // namespace ddp::launcher::fanout
