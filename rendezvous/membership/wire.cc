// Shared fields, the version handshake and the native requests (agent -> daemon).
// Pushes: wire_events.cc.
#include "rendezvous/membership/wire.h"

#include <algorithm>
#include <type_traits>

#include "rendezvous/membership/wire_fields.h"

namespace ddp::rendezvous::membership {
namespace fields {

void put_failure(std::string& out, const Failure& f) {
  codec::put_record(out, [&] {
    put_str(out, f.node_key);
    put<std::uint32_t>(out, f.group_rank);
    put<std::uint32_t>(out, f.local_rank);
    put<std::uint32_t>(out, f.rank);
    put<std::int32_t>(out, f.exit_code);
    put<std::int64_t>(out, f.pid);
    put<std::int64_t>(out, f.time.time_since_epoch().count());
    put_str(out, f.error_file);
    put_str(out, f.message);
    put<std::uint8_t>(out, !f.hung ? 0 : f.step ? 2 : 1);
    put<std::int64_t>(out, f.hung ? f.step.value_or(0) : 0);
    for (const auto* lines : {&f.diagnosis.last_lines, &f.diagnosis.stack_head}) {
      put<std::uint64_t>(out, lines->size());
      for (const std::string& line : *lines) put_str(out, line);
    }
    put<std::uint8_t>(out, f.no_restart ? 1 : 0);
    put_str(out, f.traceback);
  });
}

namespace {

// A Diagnosis list, checked against its bounds (diagnosis.h).
std::vector<std::string> lines(codec::Reader& in, const char* what) {
  std::vector<std::string> out(in.count(what, kDiagnosisLines));
  std::size_t bytes = 0;
  for (std::string& line : out) {
    line = in.str(what, kDiagnosisLineBytes);
    bytes += line.size();
  }
  if (bytes > kDiagnosisBytes) {
    in.fail(std::string(what) + " of " + std::to_string(bytes) + " bytes exceed the limit of " +
            std::to_string(kDiagnosisBytes) + " bytes");
  }
  return out;
}

}  // namespace

Failure failure(codec::Reader& outer, const WireLimits& limits) {
  codec::Reader in = outer.record("failure");
  Failure f;
  f.node_key = name(in, limits, "node_key");
  f.group_rank = in.get<std::uint32_t>();
  f.local_rank = in.get<std::uint32_t>();
  f.rank = in.get<std::uint32_t>();
  f.exit_code = in.get<std::int32_t>();
  f.pid = in.get<std::int64_t>();
  f.time = WallTime(std::chrono::microseconds(in.get<std::int64_t>()));
  f.error_file = text(in, limits, "error_file");
  f.message = text(in, limits, "failure message");
  const auto hang = in.get<std::uint8_t>();
  const auto step = in.get<std::int64_t>();
  if (hang > 2) in.fail("failure hang flag is " + std::to_string(hang) + "; expected 0, 1 or 2");
  if (hang != 2 && step != 0) in.fail("failure step " + std::to_string(step) + " without a step");
  f.hung = hang != 0;
  if (hang == 2) f.step = step;
  f.diagnosis.last_lines = lines(in, "last lines");
  f.diagnosis.stack_head = lines(in, "stack head");
  f.no_restart = in.flag("failure no_restart");
  f.traceback = text(in, limits, "failure traceback");
  return f;
}

}  // namespace fields

using fields::put;
using fields::put_str;

// ---- the version handshake ---------------------------------------------------------------

bool compatible(const Version& agent, const Version& daemon) {
  return agent.protocol >= daemon.oldest && daemon.protocol >= agent.oldest;
}

namespace {

std::string describe(const std::optional<Version>& v) {
  if (!v) return "ddprun 0.1 (native protocol 1)";
  return "ddprun " + (v->ddprun.empty() ? std::string("?") : v->ddprun) + " (native protocol " +
         std::to_string(v->protocol) + ")";
}

void put_version(std::string& out, const Version& v) {
  put<std::uint32_t>(out, v.protocol);
  put<std::uint32_t>(out, v.oldest);
  put_str(out, v.ddprun);
}

Decoded<Version> decode_version_as(std::uint8_t type, std::string_view input,
                                   const WireLimits& limits) {
  fields::Envelope e(input, limits);
  Version v;
  e.expect(type);
  v.protocol = e.in.get<std::uint32_t>();
  v.oldest = e.in.get<std::uint32_t>();
  v.ddprun = fields::name(e.in, limits, "ddprun version");
  return e.finish(std::move(v));
}

}  // namespace

std::string skew_message(const std::optional<Version>& agent, const std::optional<Version>& daemon,
                         std::string_view daemon_at) {
  // The side whose protocol is below the other's oldest is the one to upgrade.
  const bool agent_older = !agent || (daemon && agent->protocol < daemon->oldest);
  return "version skew: this node's agent is " + describe(agent) + " and the rendezvous daemon" +
         (daemon_at.empty() ? std::string() : " at " + std::string(daemon_at)) + " is " +
         describe(daemon) + ", which cannot work together; upgrade ddprun on " +
         (agent_older ? "this node" : "the daemon's host") +
         " (every node of a job should run the same ddprun release)";
}

std::string encode_hello(const Version& agent) {
  return fields::message(kHelloType, [&](std::string& out) { put_version(out, agent); });
}

std::string encode_version(const Version& daemon) {
  return fields::message(kVersionType, [&](std::string& out) { put_version(out, daemon); });
}

Decoded<Version> decode_hello(std::string_view input, const WireLimits& limits) {
  return decode_version_as(kHelloType, input, limits);
}

Decoded<Version> decode_version(std::string_view input, const WireLimits& limits) {
  return decode_version_as(kVersionType, input, limits);
}

std::string encode_legacy_error(ErrorCode code, std::string_view message) {
  std::string out;
  put<std::uint8_t>(out, kErrorType);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(code));
  put_str(out, message);
  return out;
}

Decoded<ErrorEvent> decode_legacy_error(std::string_view input, const WireLimits& limits) {
  codec::Reader in(input, limits.max_message_bytes);
  ErrorEvent e;
  if (in.get<std::uint8_t>() != kErrorType) in.fail("not an ERROR");
  e.code = static_cast<ErrorCode>(in.get<std::uint8_t>());
  e.message = fields::text(in, limits, "error message");
  return in.finish(std::move(e));
}

// ---- requests ----------------------------------------------------------------------------

namespace {

// The type byte of each Request alternative, in the variant's order.
constexpr std::uint8_t kRequestTypes[] = {0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x87, 0x8B};
static_assert(std::size(kRequestTypes) == std::variant_size_v<Request>);

}  // namespace

std::string encode_request(const Request& request) {
  return fields::message(kRequestTypes[request.index()], [&](std::string& out) {
    std::visit(
        [&out](const auto& r) {
          using T = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<T, JoinRequest>) {
            put_str(out, r.run_id);
            put_str(out, r.node.node_key);
            put_str(out, r.node.addr);
            put<std::uint16_t>(out, r.node.store_port);
            put<std::uint32_t>(out, r.node.local_world_size);
            put<std::uint32_t>(out, r.config.min_nodes);
            put<std::uint32_t>(out, r.config.max_nodes);
            put<std::uint32_t>(out, r.config.max_restarts);
            for (Duration d : {r.config.join_timeout, r.config.last_call_timeout,
                               r.config.close_timeout, r.config.keep_alive_interval}) {
              put<std::int64_t>(out, d.count());
            }
            put<std::uint32_t>(out, r.config.keep_alive_max_attempt);
            put<std::uint32_t>(out, r.config.max_no_progress_restarts);
            put<std::int32_t>(out, r.config.no_progress_exit_code);
            put<std::uint32_t>(out, r.config.straggler_factor_milli);
            put<std::uint32_t>(out, r.config.straggler_reports);
            put<std::uint8_t>(out, r.config.exclude_straggler ? 1 : 0);
            put<std::uint8_t>(out, r.node_rank ? 1 : 0);
            put<std::uint32_t>(out, r.node_rank.value_or(0));
          } else if constexpr (std::is_same_v<T, ReportFailure>) {
            put<std::uint64_t>(out, r.round);
            put<std::uint64_t>(out, r.failures.size());
            for (const Failure& f : r.failures) fields::put_failure(out, f);
          } else if constexpr (std::is_same_v<T, WorkersStopped> ||
                               std::is_same_v<T, ReportSuccess>) {
            put<std::uint64_t>(out, r.round);
          } else if constexpr (std::is_same_v<T, Leave>) {
            put_str(out, r.reason);
          } else if constexpr (std::is_same_v<T, Progress>) {
            put<std::uint64_t>(out, r.round);
            put<std::int64_t>(out, r.stepping.count());
            put<std::uint64_t>(out, r.ranks.size());
            for (const RankProgress& p : r.ranks) {
              codec::put_record(out, [&] {
                put<std::uint64_t>(out, p.rank);
                put<std::int64_t>(out, p.step);
                put<std::int64_t>(out, p.step_time.count());
              });
            }
          }
        },
        request);
  });
}

namespace {

Request read_request(std::uint8_t type, codec::Reader& in, const WireLimits& limits) {
  switch (type) {
    case 0x80: {
      JoinRequest r;
      r.run_id = fields::name(in, limits, "run_id");
      r.node.node_key = fields::name(in, limits, "node_key");
      r.node.addr = fields::name(in, limits, "addr");
      r.node.store_port = in.get<std::uint16_t>();
      r.node.local_world_size = in.get<std::uint32_t>();
      r.config.min_nodes = in.get<std::uint32_t>();
      r.config.max_nodes = in.get<std::uint32_t>();
      r.config.max_restarts = in.get<std::uint32_t>();
      r.config.join_timeout = Duration(in.get<std::int64_t>());
      r.config.last_call_timeout = Duration(in.get<std::int64_t>());
      r.config.close_timeout = Duration(in.get<std::int64_t>());
      r.config.keep_alive_interval = Duration(in.get<std::int64_t>());
      r.config.keep_alive_max_attempt = in.get<std::uint32_t>();
      r.config.max_no_progress_restarts = in.get<std::uint32_t>();
      r.config.no_progress_exit_code = in.get<std::int32_t>();
      r.config.straggler_factor_milli = in.get<std::uint32_t>();
      r.config.straggler_reports = in.get<std::uint32_t>();
      r.config.exclude_straggler = in.flag("exclude_straggler");
      const bool pinned = in.flag("has_node_rank");
      const auto node_rank = in.get<std::uint32_t>();
      if (pinned) {
        r.node_rank = node_rank;
      } else if (node_rank != 0) {
        in.fail("node_rank " + std::to_string(node_rank) + " without has_node_rank");
      }
      return r;
    }
    case 0x81:
      return Heartbeat{};
    case 0x82: {
      ReportFailure r;
      r.round = in.get<std::uint64_t>();
      const std::size_t n = in.count("failures", limits.max_failures);
      // Reserve only what the bytes at hand can hold: a short message declaring 4096
      // failures must not make us allocate for 4096 (a failure takes 4 bytes at least).
      r.failures.reserve(std::min(n, in.remaining() / 4));
      for (std::size_t i = 0; i < n && in.ok(); ++i)
        r.failures.push_back(fields::failure(in, limits));
      return r;
    }
    case 0x83:
      return WorkersStopped{in.get<std::uint64_t>()};
    case 0x84:
      return ReportSuccess{in.get<std::uint64_t>()};
    case 0x85:
      return Leave{fields::text(in, limits, "leave reason")};
    case 0x87:
      return QueryWaiting{};
    case 0x8B: {
      Progress r;
      r.round = in.get<std::uint64_t>();
      r.stepping = Duration(in.get<std::int64_t>());
      const std::size_t n = in.count("progress ranks", limits.max_ranks);
      r.ranks.reserve(std::min(n, in.remaining() / 4));  // a rank record: 4 bytes at least
      for (std::size_t i = 0; i < n && in.ok(); ++i) {
        codec::Reader rank = in.record("rank");
        RankProgress& p = r.ranks.emplace_back();
        p.rank = rank.get<std::uint64_t>();
        p.step = rank.get<std::int64_t>();
        p.step_time = std::chrono::microseconds(rank.get<std::int64_t>());
      }
      return r;
    }
    default:
      in.fail("unknown native rendezvous request type " + std::to_string(type) +
              " (is the agent newer than the daemon?)");
      return Request{};
  }
}

}  // namespace

Decoded<Request> decode_request(std::string_view input, const WireLimits& limits) {
  return fields::decode<Request>(input, limits, read_request);
}

}  // namespace ddp::rendezvous::membership
