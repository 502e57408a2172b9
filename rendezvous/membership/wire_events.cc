// The native pushes (daemon -> agent): the events of messages.h on the wire.
#include <type_traits>

#include "rendezvous/membership/wire.h"
#include "rendezvous/membership/wire_codec.h"

namespace ddp::rendezvous::membership {
namespace {

using codec::put;
using codec::put_str;

void put_optional_failure(std::string& out, const std::optional<Failure>& f) {
  put<std::uint8_t>(out, f ? 1 : 0);
  if (f) codec::put_failure(out, *f);
}

std::optional<Failure> get_optional_failure(codec::Reader& in) {
  if (!in.get_bool("has_failure") || !in.ok()) return std::nullopt;
  return in.failure();
}

}  // namespace

std::string encode_push(const Payload& push) {
  std::string out;
  put<std::uint8_t>(out, std::holds_alternative<Waiting>(push) ? kWaitingType
                         : std::holds_alternative<Straggler>(push)
                             ? kStragglerType
                             : static_cast<std::uint8_t>(kFirstPushType + push.index()));
  std::visit(
      [&out](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, Joined>) {
          put<std::uint64_t>(out, p.round);
          put<std::uint8_t>(out, p.waiting ? 1 : 0);
        } else if constexpr (std::is_same_v<T, RoundComplete>) {
          put<std::uint64_t>(out, p.round);
          put<std::uint32_t>(out, p.restart_count);
          put<std::uint32_t>(out, p.group_rank);
          put<std::uint32_t>(out, p.group_world_size);
          put<std::uint32_t>(out, p.local_world_size);
          put<std::uint64_t>(out, p.rank_offset);
          put<std::uint64_t>(out, p.world_size);
          put_str(out, p.store_addr);
          put<std::uint16_t>(out, p.store_port);
        } else if constexpr (std::is_same_v<T, StopWorkers>) {
          put<std::uint64_t>(out, p.round);
          put<std::uint8_t>(out, static_cast<std::uint8_t>(p.reason));
          put_str(out, p.detail);
          put_optional_failure(out, p.first_failure);
        } else if constexpr (std::is_same_v<T, JobFinished>) {
          put<std::int32_t>(out, p.exit_code);
          put_str(out, p.reason);
          put_optional_failure(out, p.root_cause);
          put<std::int64_t>(out, p.goodput.stepping.count());
          put<std::int64_t>(out, p.goodput.wall.count());
          put<std::uint8_t>(out, p.no_progress ? 1 : 0);
        } else if constexpr (std::is_same_v<T, ErrorEvent>) {
          put<std::uint8_t>(out, static_cast<std::uint8_t>(p.code));
          put_str(out, p.message);
        } else if constexpr (std::is_same_v<T, Waiting>) {
          put<std::uint32_t>(out, p.joined);
          put<std::uint32_t>(out, p.min_nodes);
          put<std::uint32_t>(out, p.max_nodes);
          put<std::int64_t>(out, p.join_timeout_left.count());
          put<std::int64_t>(out, p.last_call_left ? p.last_call_left->count() : -1);
        } else if constexpr (std::is_same_v<T, Straggler>) {
          put<std::uint64_t>(out, p.round);
          put<std::uint64_t>(out, p.rank);
          put<std::int64_t>(out, p.step_time.count());
          put<std::int64_t>(out, p.median.count());
          put<std::uint32_t>(out, p.reports);
          put<std::uint8_t>(out, p.removed ? 1 : 0);
        }
      },
      push);
  return out;
}

Decoded<Payload> decode_push(std::string_view input, const WireLimits& limits) {
  codec::Reader in(input, limits);
  const auto type = in.get<std::uint8_t>();
  if (!in.ok()) return in.finish(Payload{});
  switch (type) {
    case 0x90: {
      Joined j;
      j.round = in.get<std::uint64_t>();
      j.waiting = in.get_bool("waiting");
      return in.finish(Payload{j});
    }
    case 0x91: {
      RoundComplete r;
      r.round = in.get<std::uint64_t>();
      r.restart_count = in.get<std::uint32_t>();
      r.group_rank = in.get<std::uint32_t>();
      r.group_world_size = in.get<std::uint32_t>();
      r.local_world_size = in.get<std::uint32_t>();
      r.rank_offset = in.get<std::uint64_t>();
      r.world_size = in.get<std::uint64_t>();
      r.store_addr = in.name("store_addr");
      r.store_port = in.get<std::uint16_t>();
      return in.finish(Payload{std::move(r)});
    }
    case 0x92: {
      StopWorkers s;
      s.round = in.get<std::uint64_t>();
      const auto reason = in.get<std::uint8_t>();
      if (reason < 1 || reason > 3) {
        in.fail("stop reason " + std::to_string(reason) + " is not 1..3");
      }
      s.reason = static_cast<StopReason>(reason);
      s.detail = in.text("stop detail");
      s.first_failure = get_optional_failure(in);
      return in.finish(Payload{std::move(s)});
    }
    case 0x93: {
      JobFinished f;
      f.exit_code = in.get<std::int32_t>();
      f.reason = in.text("finish reason");
      f.root_cause = get_optional_failure(in);
      f.goodput.stepping = Duration(in.get<std::int64_t>());
      f.goodput.wall = Duration(in.get<std::int64_t>());
      f.no_progress = in.get_bool("no_progress");
      return in.finish(Payload{std::move(f)});
    }
    case 0x94: {
      ErrorEvent e;
      const auto code = in.get<std::uint8_t>();
      if (code < static_cast<std::uint8_t>(ErrorCode::kInvalidArgument) ||
          code > static_cast<std::uint8_t>(ErrorCode::kUnauthenticated)) {
        in.fail("error code " + std::to_string(code) + " is not a ddp::ErrorCode (1..12)");
      }
      e.code = static_cast<ErrorCode>(code);
      e.message = in.text("error message");
      return in.finish(Payload{std::move(e)});
    }
    case kWaitingType: {
      Waiting w;
      w.joined = in.get<std::uint32_t>();
      w.min_nodes = in.get<std::uint32_t>();
      w.max_nodes = in.get<std::uint32_t>();
      w.join_timeout_left = Duration(in.get<std::int64_t>());
      const auto last_call = in.get<std::int64_t>();
      if (last_call < -1) in.fail("last_call_left " + std::to_string(last_call) + " is below -1");
      if (last_call >= 0) w.last_call_left = Duration(last_call);
      return in.finish(Payload{w});
    }
    case kStragglerType: {
      Straggler g;
      g.round = in.get<std::uint64_t>();
      g.rank = in.get<std::uint64_t>();
      g.step_time = std::chrono::microseconds(in.get<std::int64_t>());
      g.median = std::chrono::microseconds(in.get<std::int64_t>());
      g.reports = in.get<std::uint32_t>();
      g.removed = in.get_bool("removed");
      return in.finish(Payload{g});
    }
    default:
      in.fail("unknown native rendezvous push type " + std::to_string(type) +
              "; this agent knows 144..148, 150 and 152 (is the daemon newer than the agent?)");
      return in.finish(Payload{});
  }
}

}  // namespace ddp::rendezvous::membership
