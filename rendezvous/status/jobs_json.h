// /api/jobs and /api/jobs/<run id>: jobs as JSON (schema in docs/status.md). Pure: views and
// the clocks in, text out; wall times are ISO 8601 UTC with milliseconds ("...T12:00:00.000Z").
#pragma once

#include <string>
#include <vector>

#include "rendezvous/membership/job_view.h"
#include "rendezvous/status/status_source.h"

namespace ddp::rendezvous::status {

// {"generated_at": TIME, "jobs": [JOB, ...]}
std::string format_jobs_json(const std::vector<membership::JobView>& jobs, const Clocks& clocks);
// {"generated_at": TIME, "job": JOB}
std::string format_job_json(const membership::JobView& job, const Clocks& clocks);

std::string iso_time(std::chrono::system_clock::time_point t);

}  // namespace ddp::rendezvous::status
