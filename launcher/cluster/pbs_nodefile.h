// Inside a PBS job (Torque, PBS Pro, OpenPBS): this node's part of the job from PBS_NODEFILE,
// which lists one line per slot (a host with 4 slots appears 4 times, usually together).
//  - nodes = the unique hosts in order of first appearance; node count = how many;
//  - this node's rank = the position of the given hostname among them, matching short names
//    and fully qualified names either way (host_match.h); it must match exactly one node;
//  - rendezvous endpoint = the first host; run id = PBS_JOBID.
// Pure: the caller reads the file and passes its text and this machine's hostname.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/cluster/cluster_context.h"

namespace ddp::launcher::cluster {

struct PbsNode {
  std::string host;
  int slots = 0;       // lines naming it
  int first_line = 0;  // 0-based index of its first line among the host lines (pbsdsh -n)
};

// True when PBS_JOBID or PBS_NODEFILE is set.
bool in_pbs_job(const Environment& env);

// Blank lines are skipped and surrounding whitespace trimmed; a line with inner whitespace
// or a character no hostname has is an error naming `path` and the line number.
Result<std::vector<PbsNode>> parse_pbs_nodefile(std::string_view text, std::string_view path);

// `nodefile_text` is the content of $PBS_NODEFILE; `hostname` this machine's name.
Result<ClusterContext> pbs_context(const Environment& env, std::string_view nodefile_text,
                                   std::string_view hostname);

}  // namespace ddp::launcher::cluster
