// Internal to launcher/options.cc and its helpers: the steps that turn RawOptions into an
// Invocation, each filling its part of it, and the small helpers they share. Pure.
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/option_values.h"
#include "launcher/options.h"
#include "launcher/raw_options.h"

namespace ddp::launcher::steps {

// Says where a bad value came from when it was not the command line ("PET_NNODES=3:2: ...").
Status from(const RawValue& value, Status status);

// Moves a parsed value into `out`, or returns the error annotated by from().
template <typename T>
Status take(const RawValue& value, Result<T> parsed, T& out) {
  if (!parsed) return from(value, parsed.status());
  out = std::move(parsed).value();
  return Status::ok();
}

// An integer from min to max (parse_integer) converted into `out`, or the error from() annotates.
template <typename T>
Status take_integer(const RawValue& value, long long min, long long max, T& out) {
  auto parsed = parse_integer(value.origin, value.text, min, max);
  if (!parsed) return from(value, parsed.status());
  out = static_cast<T>(*parsed);
  return Status::ok();
}

// A flag's value: set on the command line, or PET_<NAME> as an integer (non-zero = on).
Result<bool> flag(const RawOptions& raw, const std::string& key);

// worker_argv, python, script.
Status resolve_program(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out);
// nproc_per_node, gpu_ids, virtual_local_rank (launcher/worker_count.cc).
Status resolve_workers(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out);
// Node counts, rendezvous backend/endpoint/id/conf, node rank, master address and port.
Status resolve_rendezvous(const RawOptions& raw, const LaunchEnvironment& environment,
                          Invocation& out);
// --launcher, --hosts/--hostfile, ssh options, and the Slurm/PBS environment: fills
// out.launch and applies what a batch system says where no flag was given
// (launcher/cluster_options.cc). Runs after resolve_workers and resolve_rendezvous.
Status resolve_cluster(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out);
// A notice when a job of several nodes names a loopback rendezvous endpoint (c10d) or master
// address (static, default 127.0.0.1), which other machines cannot reach
// (launcher/loopback_notice.cc). Runs after resolve_cluster; silent for fan-outs.
void notice_loopback(const RawOptions& raw, Invocation& out);
// Node rank 0 of a static job of several nodes: out.info gets the command the other nodes
// need, with RANK standing for their node rank (launcher/other_nodes_command.cc).
void note_other_nodes_command(const RawOptions& raw, Invocation& out);
// --max-connections, --max-connections-per-peer, --first-request-timeout, --store-allow: the
// limits of the servers this node hosts (launcher/connection_options.cc).
Status resolve_connections(const RawOptions& raw, Invocation& out);
// --log-line-prefix-template (else TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE), the duplicate
// filters, --logs-specs and --numa-binding's mode (launcher/output_options.cc).
Status resolve_output(const RawOptions& raw, const LaunchEnvironment& environment, Invocation& out);
// Restarts, role, logs, streams, console filter, signals, timeouts (and
// TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT), accepted-only options.
Status resolve_control(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out);

}  // namespace ddp::launcher::steps
