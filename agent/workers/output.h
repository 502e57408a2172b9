// Where worker output goes: the console with a torchrun-style "[<role><local_rank>]:"
// prefix on every whole line (or --log-line-prefix-template's, expanded once per worker and
// attempt), and/or <attempt_dir>/<local_rank>/{stdout,stderr}.log (raw bytes, no prefix).
// With --duplicate-std{out,err}-filters, the prefixed lines of teed streams that contain any
// filter are also appended to <attempt_dir>/filtered_std{out,err}.log, one file for all ranks
// (torchrun's DefaultLogsSpecs layout).
//
// Routing (route_for, pure): a stream in -r/--redirects goes to its file only; in
// -t/--tee to its file and the console; otherwise to the console. --local-ranks-filter
// removes ranks from the console only. When the user gave --log-dir, both files are
// always written (a full copy of the run); with the default temporary log dir only
// redirected or teed streams get files, as torchrun does.
//
// Each worker's last lines (stdout and stderr as they came, whatever the routing) are kept
// within rendezvous/membership/diagnosis.h's bounds, for its failure report.
//
// Threading: the agent's io_context thread. Console writes are blocking writes to the
// agent's stdout (worker stdout) and stderr (worker stderr).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config.h"
#include "common/status.h"
#include "proc/line_splitter.h"
#include "proc/process_launcher.h"
#include "rendezvous/membership/diagnosis.h"

namespace ddp::agent {

struct StreamRoute {
  bool console = false;
  bool file = false;
  bool operator==(const StreamRoute&) const = default;
};

StreamRoute route_for(const AgentConfig& config, bool log_dir_given, int local_rank,
                      proc::StreamId stream);

// "[default0]:" for role "default", local rank 0.
std::string output_prefix(const std::string& role, int local_rank);

// The prefix of one worker: `line_template` (torchrun's ${role_name}, ${local_rank}, ${rank},
// ${hostname}; other text as string.Template.safe_substitute leaves it) or, when it is empty,
// output_prefix(role, local_rank).
std::string output_prefix(const std::string& line_template, const std::string& role, int local_rank,
                          int rank, const std::string& hostname);

class OutputRouter {
 public:
  OutputRouter(const AgentConfig& config, bool log_dir_given, int console_out_fd = 1,
               int console_err_fd = 2);
  ~OutputRouter();
  OutputRouter(const OutputRouter&) = delete;
  OutputRouter& operator=(const OutputRouter&) = delete;

  // Creates <attempt_dir>/<r>/ for every local rank and opens the log files routing asks
  // for; sets each worker's prefix (global rank = global_rank_base + local rank).
  // Errors: kIo naming the path.
  Status begin_attempt(const std::filesystem::path& attempt_dir, int global_rank_base = 0);
  void write(int local_rank, proc::StreamId stream, std::string_view bytes);
  // EOF of one stream: prints its partial last line.
  void end_stream(int local_rank, proc::StreamId stream);
  // Flushes every partial line and closes the files.
  void end_attempt();
  // The last lines of local rank `local_rank` in this attempt (kept until the next begins).
  std::vector<std::string> last_lines(int local_rank) const;

 private:
  struct Sink;
  Sink* sink(int local_rank, proc::StreamId stream);
  void on_line(const Sink& sink, std::string_view line);
  const std::vector<std::string>& filters(proc::StreamId stream) const;

  const AgentConfig& config_;
  int console_fd_[2];
  std::string hostname_;
  int filtered_fd_[2] = {-1, -1};                        // filtered_stdout.log, filtered_stderr.log
  std::vector<std::unique_ptr<Sink>> sinks_;             // 2 per local rank: stdout, stderr
  std::vector<rendezvous::membership::LineTail> tails_;  // 1 per local rank
  std::string scratch_;
};

}  // namespace ddp::agent
