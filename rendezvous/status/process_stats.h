// This process's resident memory, CPU time and open descriptors, read from /proc/self.
// Threading: any thread. Never fails: a field that cannot be read is 0.
#pragma once

#include <string_view>

#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status {

ProcessStats read_process_stats();

// Pure parsers of /proc/self/stat and /proc/self/statm text (tests feed them samples).
// cpu seconds = (utime + stime) / ticks_per_second; rss = resident pages * page_bytes.
double parse_cpu_seconds(std::string_view stat_text, long ticks_per_second);
std::uint64_t parse_rss_bytes(std::string_view statm_text, long page_bytes);

}  // namespace ddp::rendezvous::status
