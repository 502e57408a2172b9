#include "launcher/fanout/fanout.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "agent/membership/etcd_settings.h"
#include "agent/membership/rdzv_settings.h"
#include "agent/report/job_report.h"
#include "common/host_port.h"
#include "common/signal_name.h"
#include "launcher/cluster/pbs_launch.h"
#include "launcher/fanout/command_runs.h"
#include "launcher/fanout/etcd_outcome.h"
#include "launcher/fanout/launch_checks.h"
#include "launcher/fanout/local_address.h"
#include "launcher/fanout/node_launches.h"
#include "launcher/fanout/output_relay.h"
#include "launcher/fanout/secret_file.h"
#include "proc/signal_router.h"
#include "proc/spawner.h"
#include "rendezvous/auth/auth.h"
#include "rendezvous/server.h"
#include "rendezvous/status/status_server.h"

namespace ddp::launcher::fanout {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Kind = launcher::LaunchPlan::Kind;

constexpr int kUsageExit = 2;
constexpr auto kStopMargin = 10s;      // beyond --shutdown-timeout before SIGTERM to ssh
constexpr auto kKillAfter = 5s;        // SIGTERM to SIGKILL of the ssh/pbsdsh groups
constexpr auto kFinishedLinger = 30s;  // job finished: the other agents exit by then
constexpr auto kEtcdRead = 2s;         // an etcd job's end, read when an agent exits

int usage_error(const std::string& message) {
  std::fprintf(stderr, "ddprun: error: %s\n", message.c_str());
  return kUsageExit;
}

std::string first_node(const launcher::LaunchPlan& plan) {
  return plan.kind == Kind::kPbs ? plan.pbs_nodes.front().host : plan.hosts.front().host;
}

// The running fan-out: the daemon (none for an etcd job), the ssh/pbsdsh children, their
// output, signals, timers.
class Fanout final : public proc::ProcessObserver {
 public:
  Fanout(const launcher::Invocation& invocation, std::optional<agent::EtcdSettings> etcd)
      : invocation_(invocation),
        etcd_(std::move(etcd)),
        children_(io_, *this),
        signals_(io_),
        grace_(io_),
        linger_(io_) {}

  int run(const FanoutSite& site_template, std::uint16_t port,
          std::optional<cluster::PbsFlavor> flavor) {
    FanoutSite site = site_template;
    if (!etcd_) {
      rendezvous::ServerOptions options;
      options.connections = invocation_.config.connection_limits;
      // A fresh secret per job: only the agents this ddprun starts can join, report or stop it.
      auto secret = rendezvous::auth::fresh_secret();
      if (!secret) return usage_error("cannot make the job's secret: " + secret.status().message());
      secret_ = std::move(secret).value();
      options.auth.pinned.push_back(
          {invocation_.config.run_id,
           rendezvous::auth::job_key(secret_, invocation_.config.run_id)});
      options.host = "";  // every interface: the nodes dial the advertised address
      options.port = port;
      auto server = rendezvous::Server::start(io_, options);
      if (!server) return usage_error("cannot host the rendezvous: " + server.status().message());
      server_ = std::move(server).value();
      site.endpoint = join_host_port(site.endpoint, server_->port());
      if (flavor) {
        auto file = write_secret_file(site.cwd, secret_);
        if (!file) return usage_error(file.status().message());
        secret_file_.emplace(*file);
        site.secret_file = *file;
      }
      if (invocation_.config.status_port) {
        rendezvous::status::StatusOptions status_options;
        status_options.port = *invocation_.config.status_port;
        auto status = rendezvous::status::StatusServer::start(io_, *server_, status_options);
        if (!status) return usage_error("cannot serve the status: " + status.status().message());
        status_ = std::move(status).value();
      }
    }
    auto launches = flavor ? pbs_launches(invocation_, site, *flavor, "pbsdsh")
                           : ssh_launches(invocation_, site);
    if (!launches) return usage_error(launches.status().message());
    launches_ = std::move(launches).value();

    signals_.route(invocation_.config.signals_to_handle, [this](int sig) { on_signal(sig); });
    std::string labels;
    for (const auto& launch : launches_) labels += (labels.empty() ? "" : ", ") + launch.label;
    spdlog::info("job {}: rendezvous {} {} for {} node(s); starting the agents: {}",
                 invocation_.config.run_id, etcd_ ? "through etcd" : "on", site.endpoint,
                 invocation_.config.job.max_nodes, labels);
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      int id = static_cast<int>(i);
      relay_.set_label(id, launches_[i].label);
      auto pid = children_.spawn(id, child_spec(launches_[i].argv, launches_[i].stdin_pipe));
      if (!pid) {
        spdlog::error("{}: {}", launches_[i].label, pid.status().message());
        failed_start_ = true;
        begin_stop(0);
        break;
      }
      ++live_;
      // ssh, c10d: the agent reads its secret first (never argv).
      if (launches_[i].stdin_pipe && !secret_.empty()) {
        if (Status s = children_.write_stdin(id, secret_ + "\n"); !s) {
          spdlog::warn("{}: cannot hand over the job secret: {}", launches_[i].label, s.message());
        }
      }
    }
    if (live_ == 0) return 1;
    io_.run();
    return exit_code_;
  }

  // proc::ProcessObserver
  void on_output(int id, proc::StreamId stream, std::string_view bytes) override {
    relay_.write(id, stream, bytes);
  }
  void on_output_end(int id, proc::StreamId stream) override { relay_.end(id, stream); }
  void on_exit(int id, proc::ExitStatus status) override {
    relay_.end(id, proc::StreamId::kStdout);
    relay_.end(id, proc::StreamId::kStderr);
    --live_;
    const std::string& label = launches_[static_cast<std::size_t>(id)].label;
    const auto job = finished_job();
    if (status.ok() || job || stopping_) {
      spdlog::info("{}: {} ended with {}", label, launcher_name(), status.describe());
    } else {
      spdlog::warn(
          "{}: {} ended with {} before the job finished{}", label, launcher_name(),
          status.describe(),
          status.code == 255 && status.signal == 0 ? " (ssh could not keep the session)" : "");
    }
    if (live_ == 0) return finish();
    if (job) {
      if (!lingering_) {
        lingering_ = true;
        linger_.expires_after(kFinishedLinger);
        linger_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec) begin_stop(0);
        });
      }
      return;
    }
    // A node whose agent is gone for good: below the minimum node count the job cannot go on.
    if (!stopping_ && live_nodes() < static_cast<int>(invocation_.config.job.min_nodes)) {
      spdlog::error("{} node(s) left, --nnodes needs at least {}: stopping every agent",
                    live_nodes(), invocation_.config.job.min_nodes);
      begin_stop(0);
    }
  }

 private:
  const char* launcher_name() const {
    return invocation_.launch.kind == Kind::kPbs ? "pbsdsh" : "ssh";
  }

  // Nodes still served by a live ssh/pbsdsh (Torque's single pbsdsh serves them all).
  int live_nodes() const {
    if (launches_.size() == 1 && invocation_.launch.kind == Kind::kPbs) {
      return live_ > 0 ? static_cast<int>(invocation_.config.job.max_nodes) : 0;
    }
    return live_;
  }

  std::optional<rendezvous::membership::JobFinished> finished_job() {
    if (etcd_) {
      if (!etcd_outcome_) {
        etcd_outcome_ = read_etcd_outcome(*etcd_, invocation_.config.run_id, kEtcdRead);
      }
      return etcd_outcome_;
    }
    if (!server_) return std::nullopt;
    return server_->job_outcome(invocation_.config.run_id);
  }

  void on_signal(int sig) {
    if (stopping_ && sig == SIGINT && stop_signal_ == SIGINT) {
      spdlog::warn("second SIGINT: ending every {} session now", launcher_name());
      signal_all(SIGTERM);
    } else {
      spdlog::warn("received {}: stopping every node's agent", signal_name(sig));
      if (stop_signal_ == 0) stop_signal_ = sig;
      begin_stop(sig);
    }
  }

  // Asks every agent to stop, then escalates on a timer.
  void begin_stop(int sig) {
    if (stopping_) return;
    stopping_ = true;
    if (sig != 0) stop_signal_ = sig;
    for (std::size_t i = 0; i < launches_.size(); ++i) children_.close_stdin(static_cast<int>(i));
    // pbsdsh tasks have no stdin lifeline: ending the daemon stops their agents; an etcd
    // job has no daemon here, so they get SIGTERM (workers stopped, the node leaves).
    if (invocation_.launch.kind == Kind::kPbs && server_) server_->stop();
    if (invocation_.launch.kind == Kind::kPbs && etcd_) signal_all(SIGTERM);
    grace_.expires_after(invocation_.config.shutdown_timeout + kStopMargin);
    grace_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      spdlog::warn("agents still running after the shutdown timeout: SIGTERM to {}",
                   launcher_name());
      signal_all(SIGTERM);
      grace_.expires_after(kKillAfter);
      grace_.async_wait([this](const boost::system::error_code& ec2) {
        if (!ec2) signal_all(SIGKILL);
      });
    });
  }

  void signal_all(int sig) {
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      children_.signal_group(static_cast<int>(i), sig);
    }
  }

  void finish() {
    const auto job = finished_job();
    if (stop_signal_ != 0) {
      exit_code_ = 128 + stop_signal_;
    } else if (job) {
      exit_code_ = job->exit_code;
      // The job's root-cause table, once for every node (its agents leave it to this process),
      // as an agent prints it.
      agent::RootCauseReport(invocation_.config, invocation_.config.run_id)
          .job_finished(*job, nullptr);
    } else {
      exit_code_ = 1;
      spdlog::error("job {} did not finish: {}", invocation_.config.run_id,
                    failed_start_ ? "an agent could not be started"
                                  : "the agents ended before it did (see above)");
    }
    signals_.cancel();
    grace_.cancel();
    linger_.cancel();
    if (status_) status_->stop();
    if (server_) server_->stop();
    io_.stop();
  }

  const launcher::Invocation& invocation_;
  std::optional<agent::EtcdSettings> etcd_;  // an etcd job: no daemon here
  std::optional<rendezvous::membership::JobFinished> etcd_outcome_;
  asio::io_context io_;
  OutputRelay relay_;
  proc::Spawner children_;
  proc::SignalRouter signals_;
  asio::steady_timer grace_;
  asio::steady_timer linger_;
  std::unique_ptr<rendezvous::Server> server_;
  std::unique_ptr<rendezvous::status::StatusServer> status_;  // --status-port, on server_
  std::vector<NodeLaunch> launches_;
  int live_ = 0;
  bool stopping_ = false;
  bool lingering_ = false;
  bool failed_start_ = false;
  int stop_signal_ = 0;
  int exit_code_ = 1;
  std::string secret_;                     // this job's fresh secret (64 hex digits)
  std::optional<SecretFile> secret_file_;  // PBS: removed when the launcher ends
};

}  // namespace

int run(const launcher::Invocation& invocation, const FanoutProcess& process) {
  const auto& plan = invocation.launch;
  const auto& config = invocation.config;
  std::optional<cluster::PbsFlavor> flavor;
  auto find_nodes = [&]() -> Status {
    if (plan.kind != Kind::kPbs) return probe_ssh_hosts(invocation);
    auto detected = find_pbs_flavor(process.env);
    if (!detected) return detected.status();
    flavor = *detected;
    return Status::ok();
  };
  if (agent::is_etcd_backend(config.rdzv_backend)) {
    // The agents meet in the user's etcd: nothing is hosted here, nothing to advertise.
    auto etcd = agent::etcd_settings(config);
    if (!etcd) return usage_error(etcd.status().message());
    if (Status s = find_nodes(); !s) return usage_error(s.message());
    FanoutSite site{process.ddprun, process.cwd, config.rdzv_endpoint, process.env};
    std::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the launcher
    Fanout fanout(invocation, std::move(etcd).value());
    return fanout.run(site, 0, flavor);
  }
  // The agents' rendezvous settings, checked here so a mistake stops everything up front.
  agent::AgentConfig check = config;
  check.rdzv_endpoint = config.rdzv_endpoint.empty() ? "localhost" : config.rdzv_endpoint;
  check.rdzv_conf[agent::rdzv_key::kIsHost] = "false";
  auto settings = agent::rdzv_settings(check);
  if (!settings) return usage_error(settings.status().message());
  std::uint16_t port = config.rdzv_endpoint.empty() ? 0 : settings->port;

  std::string advertised = config.rdzv_endpoint.empty() ? config.local_addr : settings->host;
  if (advertised.empty()) {
    auto local = local_address_towards(first_node(plan));
    if (!local) return usage_error(local.status().message());
    advertised = *local;
  }
  if (Status s = find_nodes(); !s) return usage_error(s.message());
  FanoutSite site{process.ddprun, process.cwd, advertised, process.env};
  std::signal(SIGPIPE, SIG_IGN);  // a closed console must not kill the launcher
  Fanout fanout(invocation, std::nullopt);
  return fanout.run(site, port, flavor);
}

}  // namespace ddp::launcher::fanout
