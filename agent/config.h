// AgentConfig: the validated description of one node's part of a job. The launcher
// builds it from the command line (launcher/options.h, no I/O there); the agent runs
// it (agent/agent.h). Plain data: every field is already checked when the agent sees it.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rendezvous/connection_limits.h"
#include "rendezvous/membership/config.h"

namespace ddp::agent {

// torchrun's -r/--redirects and -t/--tee values: 0 none, 1 stdout, 2 stderr, 3 both.
enum class Streams : int { kNone = 0, kStdout = 1, kStderr = 2, kBoth = 3 };

// One value for all local ranks, optionally overridden per local rank ("0:1,1:2").
struct StreamsSpec {
  Streams all = Streams::kNone;
  std::map<int, Streams> per_rank;
  Streams for_rank(int local_rank) const {
    auto it = per_rank.find(local_rank);
    return it == per_rank.end() ? all : it->second;
  }
};

// torchrun's --numa-binding modes (launcher/numa_binding.h says what each binds).
enum class NumaBinding { kNone, kNode, kSocket, kExclusive, kCoreComplex };

struct AgentConfig {
  // The worker command, fully resolved: for a .py program {python, "-u", prog, args...},
  // for -m {python, "-u", "-m", module, args...}, for --no-python {prog, args...}.
  std::vector<std::string> worker_argv;
  // worker_argv[0] is a Python interpreter: the program runs under --python (or its default),
  // or, with --no-python, argv[0]'s file name says python. Decides the stack hook and how
  // reports name the program.
  bool python_workers = false;

  int nproc_per_node = 1;           // workers on this node
  std::vector<int> gpu_ids;         // selected GPUs in order; empty = none / not GPU-bound
  bool virtual_local_rank = false;  // each worker sees only its own GPU id

  std::string role = "default";
  // The job's options every node sends with its JOIN: --nnodes, the restart, progress and
  // straggler options, as the launcher parsed them; --rdzv-conf sets the timeouts and keep-alive
  // of a multi-node job (agent/membership/rdzv_settings.h), a one-node job keeps the defaults.
  rendezvous::membership::Config job;
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(30)};
  // TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (docs/unkillable.md): a running worker in
  // uninterruptible sleep (D) this long fails the group, and the job does not restart; 0 = off.
  std::chrono::milliseconds uninterruptible_state_timeout{0};
  // Hang detection (docs/hangs.md): 0 = off; a worker that beat and then stays silent this long
  // is hung. first_beat: a worker that never beat is judged from its start (unset: never).
  std::chrono::milliseconds hang_timeout{0};
  std::optional<std::chrono::milliseconds> hang_first_beat_timeout;

  // Logs: <log_dir>/attempt_<n>/<local_rank>/{stdout,stderr}.log and error.json.
  // Empty = a fresh directory under $TMPDIR, like torchrun.
  std::optional<std::filesystem::path> log_dir;
  StreamsSpec redirects;
  StreamsSpec tee;
  std::optional<std::set<int>> local_ranks_filter;  // unset = every local rank prints
  std::vector<int> signals_to_handle{SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  // --log-line-prefix-template: the console prefix of each worker line, with ${role_name},
  // ${local_rank}, ${rank} and ${hostname} (agent/workers/output.h); empty =
  // "[<role><local_rank>]:".
  std::string log_line_prefix_template;
  // --duplicate-std{out,err}-filters: teed lines containing any of these are also appended to
  // <attempt_dir>/filtered_std{out,err}.log (agent/workers/output.h); empty = no such file.
  std::vector<std::string> duplicate_stdout_filters;
  std::vector<std::string> duplicate_stderr_filters;
  // --numa-binding, and what it resolved to on this machine (launcher/numa_binding.h): the
  // logical CPUs of each local rank, applied in the child before exec; empty = not bound; and
  // the NUMA nodes its memory prefers (set_mempolicy, proc/child_setup.h); empty = default.
  NumaBinding numa_binding = NumaBinding::kNone;
  std::vector<std::vector<int>> cpu_affinity;
  std::vector<std::vector<int>> memory_nodes;

  // Rendezvous: c10d (an embedded or standalone daemon), static, etcd; --standalone or one
  // node: the job in this process.
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;  // host[:port]
  std::string run_id = "none";
  std::map<std::string, std::string> rdzv_conf;
  int node_rank = 0;  // static backend
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  bool master_port_given = false;  // false: the agent picks a free worker-store port
  std::string local_addr;          // address this node advertises; empty = hostname
  // --status-port: the rendezvous daemon this node hosts (c10d host, static node rank 0, the
  // launching ddprun of a fan-out) also serves its read-only status there (docs/status.md).
  std::optional<std::uint16_t> status_port;
  // --max-connections, --max-connections-per-peer, --first-request-timeout, --store-allow: the
  // limits of every server this agent hosts (the rendezvous daemon of a c10d host or static node
  // rank 0, the workers' store, the launching ddprun's daemon of a fan-out), with the meaning
  // they have for ddp-rendezvous (docs/security.md, "Connection limits").
  rendezvous::ConnectionLimits connection_limits;
  bool standalone = false;
  // Multi-node agents started by a launching ddprun over ssh (launcher/fanout/): EOF or an
  // error on stdin (the ssh session or the launcher is gone) stops this agent like SIGTERM.
  bool exit_on_stdin_eof = false;
  // --event-log: this node's JSON-lines event log (docs/event_log.md), "-" for stderr; unset
  // for none. Opened (appended to) before anything starts.
  std::optional<std::string> event_log;
  // Agents of a fan-out: the launching ddprun prints the job's root-cause table once, so
  // this agent does not (it still logs the job's end and exit code).
  bool job_report_by_launcher = false;
  // Agents a launching ddprun started over ssh: the job secret is the first line of stdin
  // (the launcher writes it there, so it is never in argv; agent/membership/job_secret.h).
  bool secret_from_stdin = false;
};

}  // namespace ddp::agent
