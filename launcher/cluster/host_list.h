// Slurm's compressed host lists ("node[01-04,07],gpu-a") expanded the way Slurm's own
// hostlist_create() and `scontrol show hostnames` expand them:
//  - hosts are separated by ',', ' ' or '\t' outside brackets; empty items are skipped;
//  - "prefix[ranges]" expands each range "lo-hi" or single number "n", in the order given;
//    the width of `lo` as written is the zero-padded width of every number it produces
//    ("[08-11]" -> 08 09 10 11, "[8-11]" -> 8 9 10 11);
//  - several bracket groups in one name ("rack[1-2]-node[01-02]") form every combination; as
//    in Slurm, the last group varies fastest and the group before it next
//    (rack1-node01 rack1-node02 rack2-node01 rack2-node02); with three or more groups Slurm's
//    nesting is kept exactly: the last group innermost, then the one before the last, then
//    the earlier ones from left to right inside it;
//  - duplicates are kept (Slurm keeps them too); callers that need unique nodes check.
// Malformed lists are errors, never guesses: an unclosed or stray bracket, text after the last
// ']' of a name, an empty group, a range whose end is below its start, a signed or non-numeric
// bound, or more than kMaxHosts hosts in total. Slurm itself never produces these.
// Pure; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ddp::launcher::cluster {

inline constexpr std::size_t kMaxHosts = 1 << 20;

// `what` names the source in messages ("SLURM_JOB_NODELIST").
Result<std::vector<std::string>> expand_host_list(std::string_view list,
                                                  std::string_view what = "host list");

}  // namespace ddp::launcher::cluster
