// Writing a whole buffer to a file descriptor (a pipe, a console, a file), for every place that
// writes raw bytes rather than through Asio. Any thread.
#pragma once

#include <string_view>

#include "common/status.h"

namespace ddp::proc {

// Writes all of `bytes`, again after EINTR and partial writes. kIo with strerror's text when a
// write fails (what came before it was written); on a non-blocking fd, EAGAIN is such a failure.
Status write_all(int fd, std::string_view bytes);

}  // namespace ddp::proc
