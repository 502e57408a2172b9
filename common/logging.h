// Process-wide logging set-up over spdlog. Call init_logging() once from main(),
// before any other thread exists; afterwards use spdlog::info(...) etc. anywhere.
#pragma once

#include <string_view>

#include "common/status.h"

namespace ddp {

// level: trace, debug, info, warn, error, critical or off. Logs go to stderr with
// "[program] [level] message" lines. Returns kInvalidArgument for an unknown level.
Status init_logging(std::string_view program, std::string_view level);

}  // namespace ddp
