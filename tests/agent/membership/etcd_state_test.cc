// P/state's value (etcd_state.h): the job's facts as recorded and read back, an older ddprun's
// record, and values that are not ddprun's.
#include "agent/membership/etcd_state.h"

#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
using rendezvous::membership::ResumePoint;

const WallClock::time_point kNow{1'795'000'000'000ms};

TEST_CASE("P/state: every field written is read back", "[etcd_state]") {
  const ResumePoint at{.round = 8,
                       .restart_count = 2,
                       .departures = 1,
                       .ranks = {"10.0.0.2:4711", "", "10.0.0.4:99"},
                       .best_step = 1200,
                       .no_progress_restarts = 3,
                       .stepping = 5400ms,
                       .age = 60s};
  const std::string value = encode_state(at, kNow);
  CHECK_THAT(value, Catch::Contains(R"("round":7)"));  // the recorded round
  CHECK_THAT(value, Catch::Contains(R"("started_ms":1794999940000)"));
  // Read 10 s later: the job is 10 s older.
  auto back = decode_state(value, kNow + 10s);
  REQUIRE(back);
  CHECK(back->round == 8);
  CHECK(back->restart_count == 2);
  CHECK(back->departures == 1);
  CHECK(back->ranks == at.ranks);
  CHECK(back->best_step == 1200);
  CHECK(back->no_progress_restarts == 3);
  CHECK(back->stepping == 5400ms);
  CHECK(back->age == 70s);
  CHECK(back->expected_nodes == 0);
  // No best step yet: none is written; a start in the future (another clock) is age 0.
  auto none = decode_state(encode_state({.round = 2}, kNow + 5s), kNow);
  REQUIRE(none);
  CHECK_FALSE(none->best_step);
  CHECK(none->age == 0ms);
}

TEST_CASE("P/state: an older record reads with no ranks, progress or goodput", "[etcd_state]") {
  auto old = decode_state(R"({"round":4,"restart_count":1,"departures":2})", kNow);
  REQUIRE(old);
  CHECK(old->round == 5);
  CHECK(old->restart_count == 1);
  CHECK(old->departures == 2);
  CHECK(old->ranks.empty());
  CHECK_FALSE(old->best_step);
  CHECK(old->no_progress_restarts == 0);
  CHECK(old->stepping == 0ms);
  CHECK(old->age == 0ms);
}

TEST_CASE("P/state: a value that is not ddprun's record is refused", "[etcd_state]") {
  for (const char* value : {"", "not json", "[1,2]", R"({"round":"seven"})",
                            R"({"round":3,"ranks":[1,2]})", R"({"round":3,"best_step":"x"})"}) {
    CHECK_FALSE(decode_state(value, kNow));
  }
}

}  // namespace
}  // namespace ddp::agent
