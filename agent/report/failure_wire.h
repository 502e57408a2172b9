// A failed worker group as the rendezvous's failure records (messages.h): the one record of a
// worker failure from the supervisor on, for the daemon, the reports and the event log.
#pragma once

#include <vector>

#include "agent/run_setup.h"
#include "agent/workers/supervisor.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

// One Failure per failed worker of `outcome` (attempt directory `attempt`), reading its error
// file: global rank from setup.group, exit code (negative signal number when killed,
// torchrun's convention), time (the error file's timestamp, else when the agent saw the exit),
// error file, message and traceback. A worker killed as hung has its HangNote in the error
// file's place (error_file = its stack file; traceback = the note's summary, then its stack),
// hung and step when judged silent; a stuck worker's traceback starts with "stuck: " and why,
// and it has no_restart. The head of a stack file (<attempt dir>/<local rank>/stack.txt,
// written when the group hung) goes to the diagnosis. node_key and group_rank are left for the
// daemon to fill in; the caller adds the last lines of output (OutputRouter::last_lines).
std::vector<rendezvous::membership::Failure> to_wire_failures(const Outcome& outcome,
                                                              const RunSetup& setup, int attempt);

}  // namespace ddp::agent
