// One HTTP/1.1 GET to HOST:PORT with an overall deadline, for `ddprun status`. Blocking: the
// caller's thread runs its own io_context until the answer, an error or the deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace ddp::launcher {

struct HttpAnswer {
  int status = 0;
  std::string body;
};

// Errors: kIo naming HOST:PORT and why (refused, unresolvable, reset), kTimeout after `deadline`.
// Any HTTP status is an answer, not an error.
Result<HttpAnswer> http_get(const std::string& host, std::uint16_t port, const std::string& target,
                            std::chrono::milliseconds deadline);

}  // namespace ddp::launcher
