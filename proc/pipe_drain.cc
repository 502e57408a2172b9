#include "proc/pipe_drain.h"

#include <unistd.h>

#include <array>
#include <cerrno>

namespace ddp::proc {

PipeState drain_pipe(int fd, const std::function<bool(std::string_view)>& sink, int rounds) {
  std::array<char, 65536> buffer;
  for (int round = 0; round < rounds; ++round) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      if (!sink(std::string_view(buffer.data(), static_cast<std::size_t>(n)))) {
        return PipeState::kClosed;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return PipeState::kOpen;
    return PipeState::kClosed;  // EOF or a read error
  }
  return PipeState::kOpen;
}

}  // namespace ddp::proc
