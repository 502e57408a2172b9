// The native pushes (daemon -> agent): the events of messages.h on the wire.
#include <type_traits>

#include "rendezvous/membership/wire.h"
#include "rendezvous/membership/wire_fields.h"

namespace ddp::rendezvous::membership {
namespace {

using fields::put;
using fields::put_str;

// The type byte of each Payload alternative, in the variant's order.
constexpr std::uint8_t kPushTypes[] = {0x90,       0x91,         0x92,          0x93,
                                       kErrorType, kWaitingType, kStragglerType};
static_assert(std::size(kPushTypes) == std::variant_size_v<Payload>);

void put_optional_failure(std::string& out, const std::optional<Failure>& f) {
  put<std::uint8_t>(out, f ? 1 : 0);
  if (f) fields::put_failure(out, *f);
}

std::optional<Failure> get_optional_failure(codec::Reader& in, const WireLimits& limits) {
  if (!in.flag("has_failure") || !in.ok()) return std::nullopt;
  return fields::failure(in, limits);
}

}  // namespace

std::string encode_push(const Payload& push) {
  return fields::message(kPushTypes[push.index()], [&](std::string& out) {
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
  });
}

namespace {

Payload read_push(std::uint8_t type, codec::Reader& in, const WireLimits& limits) {
  switch (type) {
    case 0x90: {
      Joined j;
      j.round = in.get<std::uint64_t>();
      j.waiting = in.flag("waiting");
      return j;
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
      r.store_addr = fields::name(in, limits, "store_addr");
      r.store_port = in.get<std::uint16_t>();
      return r;
    }
    case 0x92: {
      StopWorkers s;
      s.round = in.get<std::uint64_t>();
      const auto reason = in.get<std::uint8_t>();
      if (reason < 1 || reason > 3) {
        in.fail("stop reason " + std::to_string(reason) + " is not 1..3");
      }
      s.reason = static_cast<StopReason>(reason);
      s.detail = fields::text(in, limits, "stop detail");
      s.first_failure = get_optional_failure(in, limits);
      return s;
    }
    case 0x93: {
      JobFinished f;
      f.exit_code = in.get<std::int32_t>();
      f.reason = fields::text(in, limits, "finish reason");
      f.root_cause = get_optional_failure(in, limits);
      f.goodput.stepping = Duration(in.get<std::int64_t>());
      f.goodput.wall = Duration(in.get<std::int64_t>());
      f.no_progress = in.flag("no_progress");
      return f;
    }
    case kErrorType: {
      ErrorEvent e;
      const auto code = in.get<std::uint8_t>();
      if (code < static_cast<std::uint8_t>(ErrorCode::kInvalidArgument) ||
          code > static_cast<std::uint8_t>(ErrorCode::kUnauthenticated)) {
        in.fail("error code " + std::to_string(code) + " is not a ddp::ErrorCode (1..12)");
      }
      e.code = static_cast<ErrorCode>(code);
      e.message = fields::text(in, limits, "error message");
      return e;
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
      return w;
    }
    case kStragglerType: {
      Straggler g;
      g.round = in.get<std::uint64_t>();
      g.rank = in.get<std::uint64_t>();
      g.step_time = std::chrono::microseconds(in.get<std::int64_t>());
      g.median = std::chrono::microseconds(in.get<std::int64_t>());
      g.reports = in.get<std::uint32_t>();
      g.removed = in.flag("removed");
      return g;
    }
    default:
      in.fail("unknown native rendezvous push type " + std::to_string(type) +
              " (is the daemon newer than the agent?)");
      return Payload{};
  }
}

}  // namespace

Decoded<Payload> decode_push(std::string_view input, const WireLimits& limits) {
  return fields::decode<Payload>(input, limits, read_push);
}

}  // namespace ddp::rendezvous::membership
