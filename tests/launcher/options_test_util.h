// Helpers for the command-line tests: parse with a fake machine, render a result as text.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "tests/launcher/fake_gpu_inventory.h"

namespace ddp::launcher::testing {

struct Machine {
  int gpus = 0;
  int cpus = 6;
  std::map<std::string, std::string> env = {};
};

inline Result<Invocation> parse(const std::vector<std::string>& args, const Machine& m = {}) {
  FakeGpuInventory inventory(m.gpus);
  LaunchEnvironment environment{m.env, &inventory, m.cpus, "run-1234"};
  return parse_command_line(args, environment);
}

inline std::string streams_text(const agent::StreamsSpec& s) {
  std::string out = std::to_string(static_cast<int>(s.all));
  for (auto [rank, v] : s.per_rank) {
    out.push_back(' ');
    out.append(std::to_string(rank)).append(":").append(std::to_string(static_cast<int>(v)));
  }
  return out;
}

// Every field of an Invocation, one per line, so tests can compare whole results.
inline std::string describe(const Invocation& inv) {
  const auto& c = inv.config;
  std::ostringstream o;
  o << "argv:";
  for (const auto& a : c.worker_argv) o << " " << a;
  o << "\nnproc " << c.nproc_per_node << "\ngpus:";
  for (int g : c.gpu_ids) o << " " << g;
  o << "\nvirtual " << c.virtual_local_rank << "\nrole " << c.role << "\nmax_restarts "
    << c.job.max_restarts << "\nno_progress " << c.job.max_no_progress_restarts << " "
    << c.job.no_progress_exit_code << "\nstraggler " << c.job.straggler_factor_milli << " "
    << c.job.straggler_reports << " " << c.job.exclude_straggler << "\nshutdown_ms "
    << c.shutdown_timeout.count() << "\nlog_dir " << (c.log_dir ? c.log_dir->string() : "-")
    << "\nevent_log " << c.event_log.value_or("none") << "\nredirects " << streams_text(c.redirects)
    << "\ntee " << streams_text(c.tee) << "\nfilter:";
  if (c.local_ranks_filter) {
    for (int r : *c.local_ranks_filter) o << " " << r;
  } else {
    o << " all";
  }
  o << "\nsignals:";
  for (int s : c.signals_to_handle) o << " " << s;
  o << "\nbackend " << c.rdzv_backend << "\nendpoint " << c.rdzv_endpoint << "\nrun_id " << c.run_id
    << "\nconf:";
  for (const auto& [k, v] : c.rdzv_conf) o << " " << k << "=" << v;
  o << "\nnodes " << c.job.min_nodes << ":" << c.job.max_nodes << "\nnode_rank " << c.node_rank
    << "\nmaster " << c.master_addr << ":" << c.master_port << " given " << c.master_port_given
    << "\nconnections " << c.connection_limits.max_connections << " per peer "
    << c.connection_limits.max_per_peer << " first_request_ms "
    << c.connection_limits.first_request_timeout.count() << " store_allow "
    << c.connection_limits.store_allow.to_string() << "\nlocal_addr " << c.local_addr
    << "\nstandalone " << c.standalone << "\npython " << inv.python.value_or("-") << "\nscript "
    << inv.script.value_or("-") << "\nprefix_template " << c.log_line_prefix_template
    << "\nstdout_filters:";
  for (const auto& f : c.duplicate_stdout_filters) o << " [" << f << "]";
  o << "\nstderr_filters:";
  for (const auto& f : c.duplicate_stderr_filters) o << " [" << f << "]";
  o << "\nnuma " << static_cast<int>(c.numa_binding) << "\nnotices:";
  for (const auto& n : inv.notices) o << " [" << n << "]";
  return o.str();
}

}  // namespace ddp::launcher::testing
