#include "common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <string>

namespace ddp {

Status init_logging(std::string_view program, std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  // from_str maps anything unknown to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && level != "off") {
    return invalid_argument("unknown log level '" + std::string(level) +
                            "'; use trace, debug, info, warn, error, critical or off");
  }
  auto logger = spdlog::stderr_logger_st(std::string(program));
  logger->set_pattern("[%n] [%l] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return Status::ok();
}

}  // namespace ddp
