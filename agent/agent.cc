// run(): builds one node's mechanisms for its kind of job (the membership backend over a
// LocalLink for one node, a NativeLink for c10d and static, an EtcdLink for etcd; the workers;
// the clock; the report), hands them to the policy (AgentMachine), routes the signals to it,
// and runs the io_context until it is done.
#include "agent/agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "agent/agent_machine.h"
#include "agent/clock.h"
#include "agent/membership/etcd_link.h"
#include "agent/membership/etcd_settings.h"
#include "agent/membership/host_listen.h"
#include "agent/membership/job_secret.h"
#include "agent/membership/local_link.h"
#include "agent/membership/membership_backend.h"
#include "agent/membership/native_link.h"
#include "agent/membership/rdzv_settings.h"
#include "agent/report/event_log.h"
#include "agent/report/event_sink.h"
#include "agent/report/job_report.h"
#include "agent/run_setup.h"
#include "agent/stdin_watch.h"
#include "agent/workers/supervised_workers.h"
#include "agent/workers/worker_env.h"
#include "common/host_identity.h"
#include "proc/death_watch.h"
#include "proc/signal_router.h"

namespace ddp::agent {
namespace {

namespace asio = boost::asio;

// Set in every worker's environment of a multi-node job: which agent started it (for the
// death watch).
constexpr const char* kAgentVariable = "DDPRUN_AGENT_ID";

// The default temporary log directory is removed when the run left no file in it (no
// redirected output, no error file), so plain runs do not litter $TMPDIR.
void remove_if_empty(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) return;
  }
  if (!ec) std::filesystem::remove_all(dir, ec);
}

// One node of a single-node job: the workers' store on loopback unless told another address.
Result<std::unique_ptr<MembershipLink>> local_link(asio::io_context& io, const AgentConfig& config,
                                                   RunSetup& setup, proc::DeathWatch& death_watch) {
  auto link = LocalLink::start(io, config, setup);
  if (!link) {
    std::string message = "cannot start the worker store: " + link.status().message();
    if (config.master_port_given) {
      message += "; --master-port " + std::to_string(config.master_port) +
                 " is taken: pick a free port, or drop --master-port and ddprun picks one";
    }
    return io_error(message);
  }
  setup.group.master_port = (*link)->store_port();
  death_watch.add_environment_mark("TORCHELASTIC_RUN_ID=" + setup.group.run_id);
  death_watch.add_environment_mark("MASTER_PORT=" + std::to_string(setup.group.master_port));
  if (sets_omp_num_threads(setup.base_env, config.nproc_per_node)) {
    spdlog::warn(
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
        "avoid your system being overloaded, please further tune the variable for optimal "
        "performance in your application as needed.");
  }
  spdlog::info("run id {}, {} worker(s), worker store {}:{}, logs in {}", setup.group.run_id,
               config.nproc_per_node, setup.group.master_addr, setup.group.master_port,
               setup.log_dir.string());
  return std::unique_ptr<MembershipLink>(std::move(link).value());
}

// A multi-node job's secret: from stdin (a fan-out passes it there) or --rdzv-conf secret_file.
Result<std::optional<std::string>> job_secret(const AgentConfig& config,
                                              const std::optional<std::string>& file) {
  return config.secret_from_stdin ? read_secret_line(STDIN_FILENO) : load_job_secret(file);
}

// One node of a multi-node job: c10d or static (NativeLink), or etcd (EtcdLink).
template <typename Link, typename Settings, typename... Extra>
Result<std::unique_ptr<MembershipLink>> multinode_link(asio::io_context& io,
                                                       const AgentConfig& config, RunSetup& setup,
                                                       Settings settings,
                                                       proc::DeathWatch& death_watch,
                                                       Extra&&... extra) {
  // The death watch's environment match must reach this agent's workers only: other jobs
  // may share the run id (static jobs default to "none") and other agents of this job on
  // the same machine share it too. So the agent's own mark goes in with the run id, before
  // anything can fail (the watcher kills by the marks when this agent exits).
  const std::string mark = advertised_addr(config, setup) + ":" + std::to_string(::getpid());
  setup.base_env[kAgentVariable] = mark;
  death_watch.add_environment_mark(std::string(kAgentVariable) + "=" + mark);
  death_watch.add_environment_mark("TORCHELASTIC_RUN_ID=" + setup.group.run_id);
  auto link = Link::start(io, config, setup, std::move(settings), std::forward<Extra>(extra)...);
  if (!link) return link.status();
  return std::unique_ptr<MembershipLink>(std::move(link).value());
}

// Who this node's event lines come from, and how it joins its job: `backend` is "local" for a
// single node, else the rendezvous backend (whose endpoint the join event names).
EventOrigin event_origin(const AgentConfig& config, const RunSetup& setup,
                         const std::string& backend) {
  EventOrigin origin;
  origin.run_id = setup.group.run_id;
  origin.host = setup.hostname;
  origin.agent_pid = ::getpid();
  origin.backend = backend;
  if (backend != "local") origin.endpoint = config.rdzv_endpoint;
  origin.job = config.job;
  origin.nproc_per_node = config.nproc_per_node;
  return origin;
}

// Runs the policy over the mechanisms until the job is over for this node.
int drive(asio::io_context& io, const AgentConfig& config, RunSetup& setup,
          proc::DeathWatch& death_watch, RendezvousBackend& backend, JobReport& report,
          EventLog& event_log, std::chrono::milliseconds progress_interval) {
  SupervisedWorkers workers(io, config, setup, &death_watch, &event_log);
  if (Status s = workers.start_watch(); !s) {
    spdlog::error("{}", s.message());
    return 1;
  }
  AsioClock clock(io);
  proc::SignalRouter signals(io);
  StdinWatch stdin_watch(io);
  int exit_code = 1;
  AgentMachine machine(backend, workers, clock, report,
                       {.run_id = setup.group.run_id,
                        .event_log = &event_log,
                        .progress_interval = progress_interval},
                       [&](int code) {
                         exit_code = code;
                         signals.cancel();
                         stdin_watch.cancel();
                         io.stop();
                       });
  signals.route(config.signals_to_handle, [&](int sig) { machine.on_signal(sig); });
  if (config.exit_on_stdin_eof) {
    stdin_watch.start([&](const std::string& why) {
      spdlog::warn("{}: the launching ddprun or its ssh session is gone", why);
      machine.on_signal(SIGTERM);
    });
  }
  machine.start();
  io.run();
  return exit_code;
}

}  // namespace

int run(const AgentConfig& config) {
  // The event log first: a path that cannot be written is bad input, refused before anything
  // starts (one line, exit 2, as the launcher reports bad input).
  std::unique_ptr<EventSink> sink;
  if (config.event_log) {
    auto opened = FileEventSink::open(expand_event_log_path(*config.event_log, host_name()));
    if (!opened) {
      std::fprintf(stderr, "ddprun: error: %s\n", opened.status().message().c_str());
      return 2;
    }
    sink = std::move(opened).value();
  }
  auto setup = prepare_run(config);
  if (!setup) {
    spdlog::error("{}", setup.status().message());
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the agent
  // An etcd job's settings come first: the death watch revokes its lease if the agent dies.
  std::optional<EtcdSettings> etcd;
  if (is_etcd_backend(config.rdzv_backend) && !config.standalone) {
    auto settings = etcd_settings(config);
    if (!settings) {  // bad input: one line, exit 2, as the launcher reports it
      std::fprintf(stderr, "ddprun: error: %s\n", settings.status().message().c_str());
      return 2;
    }
    etcd = std::move(settings).value();
  }
  auto death_watch = proc::DeathWatch::start(etcd ? lease_revoker(*etcd) : nullptr);
  if (!death_watch) {
    spdlog::error("{}", death_watch.status().message());
    return 1;
  }
  std::string backend_name = "local";
  // The backend is destroyed once drive() returned, its loop stopped (an etcd link's last
  // words, Leave and revoke, are blocking calls then), and before the io_context and the death
  // watch.
  asio::io_context io;
  Result<std::unique_ptr<MembershipLink>> link = internal_error("no link");
  std::unique_ptr<JobReport> report;
  std::chrono::milliseconds progress_interval = std::chrono::seconds(1);  // the job's keep-alive
  if (etcd) {
    progress_interval = etcd->rdzv.config.keep_alive_interval;
    backend_name = "etcd";  // etcd-v2 and etcd-v3 are the same backend
    auto secret = job_secret(config, etcd->rdzv.secret_file);
    if (!secret) {
      std::fprintf(stderr, "ddprun: error: %s\n", secret.status().message().c_str());
      return 2;
    }
    etcd->rdzv.secret = std::move(secret).value();
    link = multinode_link<EtcdLink>(io, config, *setup, std::move(*etcd), **death_watch,
                                    &**death_watch);
    report = std::make_unique<RootCauseReport>(config, setup->group.run_id);
  } else if (is_multinode(config)) {
    auto rdzv = rdzv_settings(config);
    if (!rdzv) {  // bad multi-node input: one line, exit 2, as the launcher reports it
      std::fprintf(stderr, "ddprun: error: %s\n", rdzv.status().message().c_str());
      return 2;
    }
    backend_name = config.rdzv_backend;
    progress_interval = rdzv->config.keep_alive_interval;
    auto secret = job_secret(config, rdzv->secret_file);
    if (!secret) {
      std::fprintf(stderr, "ddprun: error: %s\n", secret.status().message().c_str());
      return 2;
    }
    rdzv->secret = std::move(secret).value();
    link = multinode_link<NativeLink>(io, config, *setup, std::move(rdzv).value(), **death_watch);
    report = std::make_unique<RootCauseReport>(config, setup->group.run_id);
  } else {
    link = local_link(io, config, *setup, **death_watch);
    report = std::make_unique<LocalJobReport>(config, *setup);
  }
  EventLog event_log;
  if (sink) event_log = EventLog(std::move(sink), event_origin(config, *setup, backend_name));
  int code = 1;
  if (link) {
    MembershipBackend backend(io, std::move(link).value());
    code = drive(io, config, *setup, **death_watch, backend, *report, event_log, progress_interval);
  } else {
    spdlog::error("{}", link.status().message());
    event_log.finish(1, "error");
  }
  if (!config.log_dir) remove_if_empty(setup->log_dir);
  return code;
}

}  // namespace ddp::agent
