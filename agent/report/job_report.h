// What a node prints when its job ends: the root-cause table, once per node. The agent policy
// (agent_machine.h) decides when; the form depends on the kind of job:
//  - LocalJobReport (one node): torchrun's "<program> FAILED" table of this node's failures of
//    the last attempt (WorkersResult::failures), the job's root cause (JobFinished) last;
//  - RootCauseReport (several nodes): the job's root cause as the rendezvous told every node,
//    the same table on every node, then the root cause's last lines of output (as the
//    rendezvous received them, docs/diagnosis.md); silent when a launching ddprun prints it
//    for the job.
//
// Threading: the agent's io_context thread.
#pragma once

#include <string>

#include "agent/config.h"
#include "agent/run_setup.h"
#include "agent/workers/workers.h"
#include "rendezvous/membership/messages.h"

namespace ddp::agent {

class JobReport {
 public:
  virtual ~JobReport() = default;
  // `last` is this node's last worker group's result in the job's last round, if any.
  virtual void job_finished(const rendezvous::membership::JobFinished& finished,
                            const WorkersResult* last) = 0;
};

class LocalJobReport final : public JobReport {
 public:
  LocalJobReport(const AgentConfig& config, const RunSetup& setup)
      : config_(config), setup_(setup) {}
  void job_finished(const rendezvous::membership::JobFinished& finished,
                    const WorkersResult* last) override;

 private:
  const AgentConfig& config_;
  const RunSetup& setup_;
};

class RootCauseReport final : public JobReport {
 public:
  RootCauseReport(const AgentConfig& config, std::string run_id)
      : config_(config), run_id_(std::move(run_id)) {}
  void job_finished(const rendezvous::membership::JobFinished& finished,
                    const WorkersResult* last) override;

 private:
  const AgentConfig& config_;
  std::string run_id_;
};

}  // namespace ddp::agent
