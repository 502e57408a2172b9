#include "ddp/heartbeat.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

namespace ddp {

Heartbeat& Heartbeat::process() {
  static Heartbeat heartbeat;
  return heartbeat;
}

Heartbeat::Heartbeat() {
  const char* path = std::getenv("DDPRUN_HEARTBEAT_FILE");
  if (path == nullptr || *path == '\0') return;
  // Non-blocking: opening fails at once when no agent reads it, and a full pipe drops a beat
  // instead of stalling training.
  fd_ = ::open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
}

void Heartbeat::begin_step() { write_step(++step_); }

void Heartbeat::beat() { write_step(step_.load()); }

void Heartbeat::beat(std::int64_t step) { write_step(step); }

void Heartbeat::write_step(std::int64_t step) {
  if (fd_ < 0) return;
  char line[24];
  char* end = std::to_chars(line, line + sizeof line - 1, step).ptr;
  *end++ = '\n';
  // One write of at most PIPE_BUF bytes to a FIFO is atomic: lines never interleave.
  ssize_t ignored = ::write(fd_, line, static_cast<std::size_t>(end - line));
  (void)ignored;
}

}  // namespace ddp
