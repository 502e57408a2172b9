// Codec helpers and the native requests (agent -> daemon). Pushes: wire_events.cc.
#include "rendezvous/membership/wire.h"

#include <algorithm>
#include <type_traits>

#include "rendezvous/membership/wire_codec.h"

namespace ddp::rendezvous::membership {
namespace codec {

void put_failure(std::string& out, const Failure& f) {
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
}

bool Reader::get_bool(const char* what) {
  const auto v = get<std::uint8_t>();
  if (v > 1) fail(std::string(what) + " flag is " + std::to_string(v) + "; expected 0 or 1");
  return v == 1;
}

std::size_t Reader::count(const char* what, std::size_t limit) {
  const auto n = get<std::uint64_t>();
  if (n > limit) {
    fail(std::to_string(n) + " " + what + " exceed the limit of " + std::to_string(limit));
    return 0;
  }
  return static_cast<std::size_t>(n);
}

std::string Reader::str(const char* what, std::size_t limit) {
  const auto len = get<std::uint64_t>();
  if (!ok()) return {};
  if (len > limit) {
    fail(std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
         std::to_string(limit) + " bytes");
    return {};
  }
  if (pos_ + len > limits_.max_message_bytes) {
    fail("message of more than " + std::to_string(limits_.max_message_bytes) +
         " bytes exceeds the limit");
    return {};
  }
  if (in_.size() - pos_ < len) {
    needed_ = pos_ + static_cast<std::size_t>(len);
    return {};
  }
  std::string s(in_.substr(pos_, static_cast<std::size_t>(len)));
  pos_ += static_cast<std::size_t>(len);
  return s;
}

Failure Reader::failure() {
  Failure f;
  f.node_key = name("node_key");
  f.group_rank = get<std::uint32_t>();
  f.local_rank = get<std::uint32_t>();
  f.rank = get<std::uint32_t>();
  f.exit_code = get<std::int32_t>();
  f.pid = get<std::int64_t>();
  f.time = WallTime(std::chrono::microseconds(get<std::int64_t>()));
  f.error_file = text("error_file");
  f.message = text("failure message");
  const auto hang = get<std::uint8_t>();
  const auto step = get<std::int64_t>();
  if (hang > 2) fail("failure hang flag is " + std::to_string(hang) + "; expected 0, 1 or 2");
  if (hang != 2 && step != 0) fail("failure step " + std::to_string(step) + " without a step");
  f.hung = hang != 0;
  if (hang == 2) f.step = step;
  f.diagnosis.last_lines = lines("last lines");
  f.diagnosis.stack_head = lines("stack head");
  f.no_restart = get_bool("failure no_restart");
  return f;
}

std::vector<std::string> Reader::lines(const char* what) {
  std::vector<std::string> out(count(what, kDiagnosisLines));
  std::size_t bytes = 0;
  for (std::string& line : out) {
    line = str(what, kDiagnosisLineBytes);
    bytes += line.size();
  }
  if (bytes > kDiagnosisBytes) {
    fail(std::string(what) + " of " + std::to_string(bytes) + " bytes exceed the limit of " +
         std::to_string(kDiagnosisBytes) + " bytes");
  }
  return out;
}

}  // namespace codec

using codec::put;
using codec::put_str;

std::string encode_request(const Request& request) {
  std::string out;
  // Request types follow the variant's order; a JOIN with a pinned node rank is JOIN_AT_RANK.
  std::uint8_t type = static_cast<std::uint8_t>(kFirstRequestType + request.index());
  if (const auto* join = std::get_if<JoinRequest>(&request); join && join->node_rank) {
    type = kJoinAtRankType;
  }
  if (std::holds_alternative<QueryWaiting>(request)) type = kQueryWaitingType;
  if (std::holds_alternative<Progress>(request)) type = kProgressType;
  put<std::uint8_t>(out, type);
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
          if (r.node_rank) put<std::uint32_t>(out, *r.node_rank);
        } else if constexpr (std::is_same_v<T, ReportFailure>) {
          put<std::uint64_t>(out, r.round);
          put<std::uint64_t>(out, r.failures.size());
          for (const Failure& f : r.failures) codec::put_failure(out, f);
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
            put<std::uint64_t>(out, p.rank);
            put<std::int64_t>(out, p.step);
            put<std::int64_t>(out, p.step_time.count());
          }
        }
      },
      request);
  return out;
}

Decoded<Request> decode_request(std::string_view input, const WireLimits& limits) {
  codec::Reader in(input, limits);
  const auto type = in.get<std::uint8_t>();
  if (!in.ok()) return in.finish(Request{});
  switch (type) {
    case 0x80:
    case kJoinAtRankType: {
      JoinRequest r;
      r.run_id = in.name("run_id");
      r.node.node_key = in.name("node_key");
      r.node.addr = in.name("addr");
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
      r.config.exclude_straggler = in.get_bool("exclude_straggler");
      if (type == kJoinAtRankType) r.node_rank = in.get<std::uint32_t>();
      return in.finish(Request{std::move(r)});
    }
    case 0x81:
      return in.finish(Request{Heartbeat{}});
    case 0x82: {
      ReportFailure r;
      r.round = in.get<std::uint64_t>();
      const std::size_t n = in.count("failures", limits.max_failures);
      // Reserve only what the bytes at hand can hold: a short message declaring 4096
      // failures must not make us allocate for 4096.
      if (in.ok()) r.failures.reserve(std::min(n, in.remaining() / codec::kMinFailureBytes));
      for (std::size_t i = 0; i < n && in.ok(); ++i) r.failures.push_back(in.failure());
      return in.finish(Request{std::move(r)});
    }
    case 0x83:
      return in.finish(Request{WorkersStopped{in.get<std::uint64_t>()}});
    case 0x84:
      return in.finish(Request{ReportSuccess{in.get<std::uint64_t>()}});
    case 0x85:
      return in.finish(Request{Leave{in.text("leave reason")}});
    case kQueryWaitingType:
      return in.finish(Request{QueryWaiting{}});
    case kProgressType: {
      Progress r;
      r.round = in.get<std::uint64_t>();
      r.stepping = Duration(in.get<std::int64_t>());
      const std::size_t n = in.count("progress ranks", limits.max_ranks);
      if (in.ok()) r.ranks.reserve(std::min(n, in.remaining() / 24));  // 24 bytes a rank
      for (std::size_t i = 0; i < n && in.ok(); ++i) {
        RankProgress p;
        p.rank = in.get<std::uint64_t>();
        p.step = in.get<std::int64_t>();
        p.step_time = std::chrono::microseconds(in.get<std::int64_t>());
        if (in.ok()) r.ranks.push_back(p);
      }
      return in.finish(Request{std::move(r)});
    }
    default:
      in.fail("unknown native rendezvous request type " + std::to_string(type) +
              "; this daemon knows 128..135 and 139 (is the agent newer than the daemon?)");
      return in.finish(Request{});
  }
}

}  // namespace ddp::rendezvous::membership
