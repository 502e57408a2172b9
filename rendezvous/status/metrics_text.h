// /metrics: the daemon's counters in the Prometheus text exposition format (version 0.0.4).
// Pure: same input, same text. Metric names and meanings are listed in docs/status.md.
#pragma once

#include <string>
#include <string_view>

#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string format_metrics(const MetricsInput& in);

// A label value with '\', '"' and newline escaped as the format requires.
std::string escape_label(std::string_view value);

}  // namespace ddp::rendezvous::status
