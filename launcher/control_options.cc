// steps::resolve_control: restarts, role, logs and console streams, signals, timeouts, and the
// torchrun options ddprun accepts without effect (or rejects with a reason).
#include "launcher/option_steps.h"
#include "launcher/option_values.h"

namespace ddp::launcher::steps {
namespace {

constexpr const char* kUninterruptibleEnv = "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT";

Status resolve_streams(const RawOptions& raw, agent::AgentConfig& config) {
  const RawValue& redirects = raw.at("redirects");
  const RawValue& tee = raw.at("tee");
  if (Status s = take(redirects, parse_streams("--redirects", redirects.text), config.redirects);
      !s) {
    return s;
  }
  if (Status s = take(tee, parse_streams("--tee", tee.text), config.tee); !s) return s;
  const RawValue& filter = raw.at("local_ranks_filter");
  if (filter.text.empty()) return Status::ok();
  std::vector<int> ranks;
  if (Status s =
          take(filter, parse_id_list("--local-ranks-filter", filter.text, "local rank"), ranks);
      !s) {
    return s;
  }
  for (int rank : ranks) {
    if (rank >= config.nproc_per_node) {
      return from(filter, invalid_argument("--local-ranks-filter " + filter.text + ": local rank " +
                                           std::to_string(rank) + " does not exist with " +
                                           std::to_string(config.nproc_per_node) +
                                           " workers; use ranks 0 to " +
                                           std::to_string(config.nproc_per_node - 1)));
    }
  }
  config.local_ranks_filter = std::set<int>(ranks.begin(), ranks.end());
  return Status::ok();
}

// Options torchrun has that change nothing in ddprun, or that ddprun cannot honour.
Status resolve_accepted_only(const RawOptions& raw, Invocation& out) {
  const RawValue& interval = raw.at("monitor_interval");
  std::chrono::milliseconds unused{};
  if (Status s = take(interval, parse_seconds("--monitor-interval", interval.text), unused); !s) {
    return s;
  }
  if (interval.given) {
    out.notices.emplace_back(
        "--monitor-interval has no effect: ddprun reacts to worker exits as they happen");
  }
  const RawValue& start = raw.at("start_method");
  if (start.text != "spawn" && start.text != "fork" && start.text != "forkserver") {
    return from(start, invalid_argument("--start-method: unknown method '" + start.text +
                                        "'; use spawn, fork or forkserver"));
  }
  const RawValue& events = raw.at("event_log_handler");
  if (events.text != "null") {
    return from(events, invalid_argument("--event-log-handler " + events.text +
                                         " is not supported by ddprun; only null is accepted"));
  }
  return Status::ok();
}

// --hang-timeout and --hang-first-beat-timeout (docs/hangs.md).
Status resolve_hang_limits(const RawOptions& raw, agent::AgentConfig& config) {
  const RawValue& timeout = raw.at("hang_timeout");
  if (timeout.given) {
    auto d = parse_duration(timeout.origin, timeout.text);
    if (!d) return from(timeout, d.status());
    config.hang_timeout = *d;
  }
  const RawValue& first = raw.at("hang_first_beat_timeout");
  if (first.given) {
    if (!timeout.given) {
      return from(first, invalid_argument(first.origin +
                                          " needs --hang-timeout (it only adds a limit for the "
                                          "first heartbeat); add --hang-timeout"));
    }
    auto d = parse_duration(first.origin, first.text);
    if (!d) return from(first, d.status());
    config.hang_first_beat_timeout = *d;
  }
  return Status::ok();
}

}  // namespace

Status resolve_control(const RawOptions& raw, const LaunchEnvironment& environment,
                       Invocation& out) {
  auto& config = out.config;
  auto& job = config.job;
  const RawValue& factor = raw.at("straggler_factor");
  for (Status s :
       {take_integer(raw.at("max_restarts"), 0, 1 << 30, job.max_restarts),
        take_integer(raw.at("max_no_progress_restarts"), 0, 1 << 20, job.max_no_progress_restarts),
        take_integer(raw.at("no_progress_exit_code"), 1, 255, job.no_progress_exit_code),
        take(factor, parse_factor(factor.origin, factor.text), job.straggler_factor_milli),
        take_integer(raw.at("straggler_reports"), 1, 1000, job.straggler_reports),
        take(raw.at("exclude_straggler"), flag(raw, "exclude_straggler"), job.exclude_straggler)}) {
    if (!s) return s;
  }

  const RawValue& role = raw.at("role");
  if (role.text.empty()) {
    return from(role, invalid_argument("--role is empty; give a name such as trainer"));
  }
  config.role = role.text;

  const RawValue& log_dir = raw.at("log_dir");
  if (log_dir.given) {
    if (log_dir.text.empty()) {
      return invalid_argument("--log-dir is empty; give a directory or drop it");
    }
    config.log_dir = std::filesystem::path(log_dir.text);
  }
  if (Status s = resolve_streams(raw, config); !s) return s;

  const RawValue& signals = raw.at("signals_to_handle");
  if (Status s = take(signals, parse_signals(signals.text), config.signals_to_handle); !s) {
    return s;
  }
  const RawValue& shutdown = raw.at("shutdown_timeout");
  for (Status s :
       {take(raw.at("exit_on_stdin_eof"), flag(raw, "exit_on_stdin_eof"), config.exit_on_stdin_eof),
        take(raw.at("secret_from_stdin"), flag(raw, "secret_from_stdin"), config.secret_from_stdin),
        take(raw.at("job_report_by_launcher"), flag(raw, "job_report_by_launcher"),
             config.job_report_by_launcher),
        take(shutdown, parse_seconds("--shutdown-timeout", shutdown.text),
             config.shutdown_timeout)}) {
    if (!s) return s;
  }
  // torchrun's variable, in seconds (fractions allowed); unset or empty: off.
  if (auto it = environment.env.find(kUninterruptibleEnv);
      it != environment.env.end() && !it->second.empty()) {
    auto timeout = parse_seconds(kUninterruptibleEnv, it->second);
    if (!timeout) return timeout.status();
    config.uninterruptible_state_timeout = *timeout;
  }
  if (Status s = resolve_hang_limits(raw, config); !s) return s;
  const RawValue& event_log = raw.at("event_log");
  if (event_log.given) {
    if (event_log.text.empty()) {
      return from(event_log,
                  invalid_argument("--event-log is empty; give a file, or - for stderr"));
    }
    config.event_log = event_log.text;
  }
  return resolve_accepted_only(raw, out);
}

}  // namespace ddp::launcher::steps
