// Worker failures between an agent and the rendezvous daemon: this node's failures as the
// daemon's rendezvous::membership::Failure (to report), and the job's root cause as the table
// every node prints (from JobFinished). failure_record() and to_wire_failures() read the error
// files (and the stack files); format_job_root_cause() is pure.
#pragma once

#include <string>
#include <vector>

#include "agent/report/error_report.h"
#include "agent/run_setup.h"
#include "agent/workers/supervisor.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

// The report record of one failed worker of attempt `attempt`: its error file (read), or for a
// worker killed as hung its HangNote in the error file's place (message, stack, time); a stuck
// worker's message starts with "stuck: " and why.
FailureRecord failure_record(const WorkerFailure& failure, const RunSetup& setup, int attempt);

// One Failure per failed worker of `outcome` (attempt directory `attempt`): global rank from
// setup.group, exit code (negative signal number when killed, torchrun's convention), time
// (the error file's timestamp, else when the agent saw the exit), error file and message
// (plus traceback), the head of its stack file (<attempt dir>/<local rank>/stack.txt, written
// when the group hung) if there is one, hung and step for a worker judged silent, no_restart
// for a stuck one. node_key and group_rank are left for the daemon to fill in; the caller adds
// the last lines of output (OutputRouter::last_lines).
std::vector<rendezvous::membership::Failure> to_wire_failures(const Outcome& outcome,
                                                              const RunSetup& setup, int attempt);

// torchrun's failure table for the job's root cause (the host column is its node key).
std::string format_job_root_cause(const std::string& program,
                                  const rendezvous::membership::Failure& f);

}  // namespace ddp::agent
