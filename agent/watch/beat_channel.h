// One worker's progress heartbeat channel: a FIFO the agent creates before the worker starts
// and names in the worker's environment (DDPRUN_HEARTBEAT_FILE). A beat is one line: empty, or
// a step number ("42"). Writers open the FIFO with O_WRONLY | O_NONBLOCK (it fails with ENXIO
// when the agent is gone) and write without blocking; a line that is not a beat (garbage,
// binary, over 64 bytes) is ignored, with one warning per channel.
//
// The FIFO is a FifoReader (fifo_reader.h): removed when the channel is destroyed.
//
// Threading: the io_context's thread; on_beat runs there.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "agent/watch/fifo_reader.h"
#include "common/status.h"
#include "proc/line_splitter.h"

namespace ddp::agent {

struct Beat {
  std::optional<std::int64_t> step;
  bool operator==(const Beat&) const = default;
};

// A beat, or nullopt when `line` (without its '\n') is not one.
std::optional<Beat> parse_beat_line(std::string_view line);

class BeatChannel {
 public:
  using OnBeat = std::function<void(const Beat&)>;
  // Creates the FIFO at `path` (mode 0600) and reads it. `label` names the worker in the one
  // warning ("local rank 1"). Errors: kIo naming the path.
  static Result<std::unique_ptr<BeatChannel>> open(boost::asio::io_context& io,
                                                   std::filesystem::path path, std::string label,
                                                   OnBeat on_beat);
  BeatChannel(const BeatChannel&) = delete;
  BeatChannel& operator=(const BeatChannel&) = delete;

  const std::filesystem::path& path() const { return fifo_->path(); }
  // The beats written but not read yet, now (FifoReader::read_pending).
  void read_pending() { fifo_->read_pending(); }

  BeatChannel(std::string label, OnBeat on_beat)
      : label_(std::move(label)), on_beat_(std::move(on_beat)) {}

 private:
  void on_line(std::string_view line);

  std::string label_;
  OnBeat on_beat_;
  proc::LineSplitter lines_{4096};
  bool warned_ = false;
  std::unique_ptr<FifoReader> fifo_;  // last: destroyed first
};

}  // namespace ddp::agent
