// The pure parts of hang detection: heartbeat lines, timer requests, the judge of silent
// workers and its culprit, faulthandler dumps with their source lines.
#include <filesystem>
#include <fstream>

#include "agent/watch/beat_channel.h"
#include "agent/watch/file_timer_server.h"
#include "agent/watch/hang_judge.h"
#include "agent/watch/stack_capture.h"
#include "tests/catch.h"

namespace ddp::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("heartbeat lines: empty or a step number, anything else is garbage", "[hang]") {
  CHECK(parse_beat_line("") == std::optional<Beat>(Beat{}));
  CHECK(parse_beat_line("42")->step == 42);
  CHECK(parse_beat_line(" 7 \r")->step == 7);
  CHECK_FALSE(parse_beat_line("-1"));
  CHECK_FALSE(parse_beat_line("step 4"));
  CHECK_FALSE(parse_beat_line("4x"));
  CHECK_FALSE(parse_beat_line(std::string("\0\xff", 2)));
  CHECK_FALSE(parse_beat_line(std::string(65, '1')));
}

TEST_CASE("timer requests as PyTorch's FileTimerClient writes them", "[hang]") {
  auto r = parse_timer_request(
      R"({"version": 1, "pid": 4242, "scope_id": "step", "expiration_time": 1700000000.25, )"
      R"("signal": 9})");
  REQUIRE(r);
  CHECK(r->pid == 4242);
  CHECK(r->scope_id == "step");
  CHECK(r->expiration_time == 1700000000.25);
  CHECK(r->signal == 9);
  auto release =
      parse_timer_request(R"({"version": 1, "pid": 1, "scope_id": "s", "expiration_time": -1})");
  REQUIRE(release);
  CHECK(release->expiration_time < 0);
  CHECK_FALSE(parse_timer_request("not json"));
  CHECK_FALSE(parse_timer_request(R"({"pid": 1, "scope_id": "s"})"));
  CHECK_FALSE(parse_timer_request(R"({"pid": "1", "scope_id": "s", "expiration_time": 1})"));
  CHECK_FALSE(parse_timer_request(R"({"pid": 0, "scope_id": "s", "expiration_time": 1})"));
}

WorkerProgress beat_at(int rank, std::int64_t step, Clock::time_point at) {
  WorkerProgress p;
  p.rank = rank;
  p.beats = 1;
  p.step = step;
  p.last_beat = at;
  return p;
}

TEST_CASE("a worker is hung after it beat and then stayed silent for the timeout", "[hang]") {
  const auto t0 = Clock::now();
  HangJudge judge({3s, std::nullopt}, t0);
  std::vector<WorkerProgress> w{beat_at(0, 5, t0 + 100ms), beat_at(1, 4, t0)};
  WorkerProgress never;
  never.rank = 2;
  w.push_back(never);
  CHECK(judge.next_deadline(w) == t0 + 3s);
  CHECK(judge.hung(w, t0 + 2999ms).empty());
  auto hung = judge.hung(w, t0 + 3s);
  // Rank 0 went silent 100 ms after rank 1 (within the window): judged with it, rank 1 first.
  // The one that never beat is never judged.
  REQUIRE(hung == std::vector<std::size_t>{1, 0});
  CHECK(HangJudge::describe(w, 1, t0 + 3s) ==
        "rank 1 last beat at step 4 (3.0 s ago); the other rank here reached step 5");
  // Both silent: the culprit is the lower step, first.
  CHECK(judge.hung(w, t0 + 4s) == std::vector<std::size_t>{1, 0});
}

TEST_CASE("the culprit is the lower step even when its beat was read last", "[hang]") {
  const auto t0 = Clock::now();
  HangJudge judge({4s, std::nullopt}, t0);
  // Rank 0 beat step 4 and blocked in a collective; rank 1 stalled after step 3, but the agent
  // read rank 1's channel 50 us after rank 0's.
  std::vector<WorkerProgress> w{beat_at(0, 4, t0), beat_at(1, 3, t0 + 50us)};
  CHECK(judge.hung(w, t0 + 4s) == std::vector<std::size_t>{1, 0});
  // A worker that beat well within the timeout is not judged with them.
  w.push_back(beat_at(2, 4, t0 + 2s));
  CHECK(judge.hung(w, t0 + 4s) == std::vector<std::size_t>{1, 0});
}

TEST_CASE("beside a worker hung elsewhere, the workers silent for half the timeout are hung",
          "[hang]") {
  const auto t0 = Clock::now();
  HangJudge judge({4s, std::nullopt}, t0);
  // Rank 3 stalled after step 4 (its node read that beat at t0); rank 2 still beats. The other
  // node's agent noticed its own rank first and the stop arrives here 3.5 s after t0: before
  // this node's own deadline (t0 + 4 s), so hung() judges nobody yet.
  std::vector<WorkerProgress> w{beat_at(2, 5, t0 + 3400ms), beat_at(3, 4, t0)};
  CHECK(judge.hung(w, t0 + 3500ms).empty());
  CHECK(judge.hung_beside(w, t0 + 3500ms) == std::vector<std::size_t>{1});
  // Silent for less than half the timeout: not judged.
  CHECK(judge.hung_beside(w, t0 + 1900ms).empty());
  // Both silent long enough: the lower step first.
  w[0] = beat_at(2, 5, t0 - 1s);
  CHECK(judge.hung_beside(w, t0 + 3500ms) == std::vector<std::size_t>{1, 0});
  HangJudge off({0ms, std::nullopt}, t0);
  CHECK(off.hung_beside(w, t0 + 60s).empty());
}

TEST_CASE("the first-beat limit judges workers that never beat", "[hang]") {
  const auto t0 = Clock::now();
  HangJudge judge({3s, 10s}, t0);
  WorkerProgress never;
  std::vector<WorkerProgress> w{never};
  CHECK(judge.next_deadline(w) == t0 + 10s);
  CHECK(judge.hung(w, t0 + 10s) == std::vector<std::size_t>{0});
  CHECK(HangJudge::describe(w, 0, t0 + 10s) == "rank 0 never sent a heartbeat");
  HangJudge off({0ms, std::nullopt}, t0);
  CHECK_FALSE(off.next_deadline({beat_at(0, 1, t0)}));
}

TEST_CASE("ties go to the earlier last beat, the others' spread is described", "[hang]") {
  const auto t0 = Clock::now();
  HangJudge judge({1s, std::nullopt}, t0);
  std::vector<WorkerProgress> w{beat_at(0, 9, t0 + 50ms), beat_at(1, 9, t0), beat_at(2, 12, t0),
                                beat_at(3, 14, t0 + 5s)};
  CHECK(judge.hung(w, t0 + 2s) == std::vector<std::size_t>{1, 0, 2});
  CHECK(HangJudge::describe(w, 1, t0 + 2s) ==
        "rank 1 last beat at step 9 (2.0 s ago); the other ranks here reached steps 9 to 14");
}

TEST_CASE("step time: between step changes, or a step's own work when the worker repeats it",
          "[hang][progress]") {
  const Clock::time_point t0{};
  const std::chrono::system_clock::time_point wall{};
  WorkerProgress p;
  CHECK(record_beat(p, 5, t0, wall));
  CHECK_FALSE(record_beat(p, std::nullopt, t0 + 10ms, wall));  // a beat without a step
  CHECK(p.step_time == 0us);                                   // one step value only: no time yet
  CHECK(record_beat(p, 7, t0 + 300ms, wall));
  CHECK(p.step_time == 150ms);  // two steps in 300 ms
  CHECK(p.beats == 3);
  CHECK(p.first_step_beat == t0);
  CHECK(p.last_step_beat == t0 + 300ms);
  // A synchronous job: step 8 starts, the rank's own work ends 100 ms later (it beats 8 again),
  // then it waits for the others at the collective until step 9 starts at 500 ms.
  CHECK(record_beat(p, 8, t0 + 400ms, wall));
  CHECK_FALSE(record_beat(p, 8, t0 + 450ms, wall));
  CHECK_FALSE(record_beat(p, 8, t0 + 500ms, wall));  // the last repeat counts
  CHECK(p.step_time == 100ms);                       // still step 7's time
  CHECK(record_beat(p, 9, t0 + 900ms, wall));
  CHECK(p.step_time == 100ms);  // 400 -> 500 ms: step 8's work, not its 500 ms
  CHECK(record_beat(p, 10, t0 + 1200ms, wall));
  CHECK(p.step_time == 300ms);  // step 9 was not repeated: the time between changes
  // A step going back (a resumed checkpoint) starts over without a time.
  CHECK(record_beat(p, 2, t0 + 1300ms, wall));
  CHECK(p.step_time == 300ms);
  CHECK(record_beat(p, 3, t0 + 1350ms, wall));
  CHECK(p.step_time == 50ms);
}

TEST_CASE("faulthandler frames get their source lines", "[hang]") {
  const auto path = std::filesystem::temp_directory_path() / "ddp_hang_parts_test.py";
  std::ofstream(path) << "import time\n\n    time.sleep(3600)  # stall\n";
  const std::string dump = "Current thread 0x1 (most recent call first):\n  File \"" +
                           path.string() + "\", line 3 in <module>\n  File \"/nonexistent.py\", " +
                           "line 1 in f\n";
  const std::string out = with_source_lines(dump);
  CHECK(out.find("line 3 in <module>\n    time.sleep(3600)  # stall\n") != std::string::npos);
  CHECK(out.find("/nonexistent.py\", line 1 in f\n") != std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ddp::agent
