#include "proc/write_all.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::proc {

Status write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error(std::strerror(errno));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

}  // namespace ddp::proc
