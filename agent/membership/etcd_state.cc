#include "agent/membership/etcd_state.h"

#include <algorithm>

#include "etcd/codec.h"

namespace ddp::agent {

namespace membership = rendezvous::membership;
using std::chrono::milliseconds;

std::string encode_state(const membership::ResumePoint& at, WallClock::time_point now) {
  const auto started = std::chrono::duration_cast<milliseconds>(now.time_since_epoch() - at.age);
  etcd::Json j{{"round", at.round - 1},
               {"restart_count", at.restart_count},
               {"departures", at.departures},
               {"ranks", at.ranks},
               {"no_progress_restarts", at.no_progress_restarts},
               {"stepping_ms", at.stepping.count()},
               {"started_ms", started.count()}};
  if (at.best_step) j["best_step"] = *at.best_step;
  return j.dump();
}

std::optional<membership::ResumePoint> decode_state(const std::string& value,
                                                    WallClock::time_point now) {
  auto j = etcd::Json::parse(value, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    membership::ResumePoint at;
    at.round = j.value("round", std::uint64_t{0}) + 1;
    at.restart_count = j.value("restart_count", std::uint32_t{0});
    at.departures = j.value("departures", std::uint32_t{0});
    at.ranks = j.value("ranks", std::vector<std::string>{});
    if (j.contains("best_step")) at.best_step = j.at("best_step").get<std::int64_t>();
    at.no_progress_restarts = j.value("no_progress_restarts", std::uint32_t{0});
    at.stepping = milliseconds(j.value("stepping_ms", std::int64_t{0}));
    if (j.contains("started_ms")) {
      const milliseconds started(j.at("started_ms").get<std::int64_t>());
      at.age = std::max(milliseconds(0),
                        std::chrono::duration_cast<milliseconds>(now.time_since_epoch()) - started);
    }
    return at;
  } catch (const etcd::Json::exception&) {  // a field of another type: not ddprun's record
    return std::nullopt;
  }
}

}  // namespace ddp::agent
