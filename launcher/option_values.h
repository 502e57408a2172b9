// Pure parsers for the values of ddprun's command-line options. Each one takes the option's
// spelling (for messages) and its text, and returns the value or a kInvalidArgument Status
// whose one-line message names the option, the bad text and what would be accepted.
// No I/O, no global state: safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/config.h"
#include "common/status.h"

namespace ddp::launcher {

// A whole-string base-10 integer within [min, max] ("3", not "3x", " 3" or "3.0").
Result<long long> parse_integer(std::string_view option, std::string_view text, long long min,
                                long long max);

// --straggler-factor: 0 (off) or a number from 1 to 1000, in thousandths (rounded).
Result<std::uint32_t> parse_factor(std::string_view option, std::string_view text);

// Non-negative seconds, fractions allowed ("30", "0.5"), as milliseconds (rounded up so that
// a non-zero value never becomes zero).
Result<std::chrono::milliseconds> parse_seconds(std::string_view option, std::string_view text);
// A positive duration: a number with a unit, ms, s, m or h ("3s", "500ms", "1.5m"), or a bare
// number of seconds; rounded up to milliseconds. Zero, negative or unparseable is an error.
Result<std::chrono::milliseconds> parse_duration(std::string_view option, std::string_view text);

// --nnodes: "N" or "MIN:MAX" with 1 <= MIN <= MAX. Returns {min, max}.
Result<std::pair<int, int>> parse_nnodes(std::string_view text);

// -r/--redirects and -t/--tee: "0".."3" for every local rank, or per local rank
// "0:1,1:2" (ranks not listed get 0).
Result<agent::StreamsSpec> parse_streams(std::string_view option, std::string_view text);

// A comma-separated list of distinct non-negative integers in the given order
// ("1,6,3"); empty items, duplicates, signs and junk are errors. `what` names an item
// in messages ("GPU id", "local rank").
Result<std::vector<int>> parse_id_list(std::string_view option, std::string_view text,
                                       std::string_view what);

// --signals-to-handle: comma-separated names with or without the SIG prefix, any case
// ("SIGTERM,int,USR1"). Only signals that can be caught and forwarded are accepted:
// HUP INT QUIT TERM USR1 USR2. Order kept, duplicates dropped.
Result<std::vector<int>> parse_signals(std::string_view text);

// --rdzv-conf: "key=value,key=value". Keys are torchrun's; the timeouts must be
// non-negative numbers, is_host a boolean. Unknown keys are kept (torchrun passes them on).
Result<std::map<std::string, std::string>> parse_rdzv_conf(std::string_view text);

// --rdzv-endpoint / --master-addr style "host[:port]" check: a non-empty host (IPv6 in
// brackets, "[::1]:29400") and, when present, a port in 0..65535.
Status check_endpoint(std::string_view option, std::string_view text);

}  // namespace ddp::launcher
