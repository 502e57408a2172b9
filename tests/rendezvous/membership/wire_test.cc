// Native wire messages: byte layout, round trips of every request and push, truncated input
// (every prefix is incomplete, never an error or a crash), oversized and malformed input.
#include "rendezvous/membership/wire.h"

#include <cstring>

#include "tests/catch.h"

namespace ddp::rendezvous::membership {
namespace {

using namespace std::chrono_literals;

Failure sample_failure() {
  Failure f;
  f.node_key = "host-b:4711";
  f.group_rank = 1;
  f.local_rank = 3;
  f.rank = 7;
  f.exit_code = -9;
  f.pid = 31337;
  f.time = WallTime(1'700'000'000'123'456us);
  f.error_file = "/tmp/err.json";
  f.message = std::string("RuntimeError: boom\0binary", 25);
  f.diagnosis.last_lines = {"step 3 loss 0.25", "", std::string("bytes \xff\0 as they came", 22)};
  f.diagnosis.stack_head = {"Current thread 0x1 (most recent call first):"};
  return f;
}

// A worker its agent judged hung: with its last step, or without (it never beat a step).
Failure hung_failure(std::optional<std::int64_t> step) {
  Failure f = sample_failure();
  f.exit_code = 124;
  f.hung = true;
  f.step = step;
  return f;
}

// A worker its agent could not end: the job must not restart for it.
Failure stuck_failure() {
  Failure f = sample_failure();
  f.no_restart = true;
  return f;
}

std::vector<Request> sample_requests() {
  Config c;
  c.min_nodes = 2;
  c.max_nodes = 4000;
  c.max_restarts = 3;
  c.join_timeout = 600s;
  c.last_call_timeout = 1500ms;
  c.close_timeout = 60s;
  c.keep_alive_interval = 1s;
  c.keep_alive_max_attempt = 3;
  c.max_no_progress_restarts = 2;
  c.no_progress_exit_code = 17;
  c.straggler_factor_milli = 1500;
  c.straggler_reports = 7;
  c.exclude_straggler = true;
  Config fixed = c;
  fixed.min_nodes = fixed.max_nodes;
  return {JoinRequest{"job-42", c, NodeInfo{"host-a:1", "10.1.2.3", 29500, 8}},
          JoinRequest{"job-42", fixed, NodeInfo{"host-b:2", "10.1.2.4", 0, 3}, 3999},
          Heartbeat{},
          ReportFailure{3, {sample_failure(), Failure{}}},
          ReportFailure{4, {}},
          ReportFailure{4, {hung_failure(41), hung_failure(std::nullopt), hung_failure(-7)}},
          ReportFailure{4, {stuck_failure(), sample_failure()}},
          WorkersStopped{5},
          ReportSuccess{6},
          Leave{"SIGTERM"},
          QueryWaiting{},
          Progress{7, 12'345ms, {{0, 41, 1500us}, {1, -3, 0us}}},
          Progress{8, 0ms, {}}};
}

std::vector<Payload> sample_pushes() {
  return {Joined{2, true},
          RoundComplete{2, 1, 3, 4, 8, 24, 32, "10.1.2.3", 29500},
          StopWorkers{2, StopReason::kNodeLost, "node host-c left", std::nullopt},
          StopWorkers{2, StopReason::kWorkerFailed, "rank 7 failed", sample_failure()},
          StopWorkers{2, StopReason::kWorkerFailed, "rank 7 hung", hung_failure(4)},
          JobFinished{137, "failed: rank 7", sample_failure(), {}, false},
          JobFinished{137, "failed: rank 7 stuck", stuck_failure(), {}, false},
          JobFinished{0, "every worker exited 0", std::nullopt, {}, false},
          JobFinished{93, "no progress", sample_failure(), Goodput{4500ms, 9000ms}, true},
          ErrorEvent{ErrorCode::kTimeout, "timed out"},
          ErrorEvent{ErrorCode::kJobFinished, "job 'x' finished (...)"},
          Waiting{1, 2, 3, Duration(599'000), Duration(250)},
          Waiting{1, 2, 2, Duration(5), std::nullopt},
          Straggler{3, 17, 300'000us, 100'000us, 5, true}};
}

TEST_CASE("every request round-trips and every prefix of it is incomplete", "[wire]") {
  for (const Request& r : sample_requests()) {
    const std::string bytes = encode_request(r);
    CHECK(is_native_request_type(static_cast<std::uint8_t>(bytes[0])));
    const Decoded<Request> d = decode_request(bytes + "trailing");
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.message == r);
    CHECK(d.consumed == bytes.size());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const Decoded<Request> p = decode_request(std::string_view(bytes).substr(0, n));
      REQUIRE(p.state == DecodeState::kIncomplete);
      CHECK(p.needed > n);
      CHECK(p.needed <= bytes.size());
    }
  }
}

TEST_CASE("every push round-trips and every prefix of it is incomplete", "[wire]") {
  for (const Payload& p : sample_pushes()) {
    const std::string bytes = encode_push(p);
    CHECK(static_cast<std::uint8_t>(bytes[0]) >= kFirstPushType);
    const Decoded<Payload> d = decode_push(bytes);
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.message == p);
    CHECK(d.consumed == bytes.size());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      REQUIRE(decode_push(std::string_view(bytes).substr(0, n)).state == DecodeState::kIncomplete);
    }
  }
}

TEST_CASE("byte layout: host-order integers and u64-length strings", "[wire]") {
  const std::string b = encode_request(WorkersStopped{0x0102030405060708ULL});
  CHECK(b == std::string("\x83\x08\x07\x06\x05\x04\x03\x02\x01", 9));
  const std::string l = encode_request(Leave{"ab"});
  CHECK(l == std::string("\x85\x02\0\0\0\0\0\0\0ab", 11));
  const std::string j = encode_push(Joined{1, true});
  CHECK(j == std::string("\x90\x01\0\0\0\0\0\0\0\x01", 10));
}

// `type` then the u64 values, as raw bytes.
std::string frame(char type, std::initializer_list<std::uint64_t> words) {
  std::string s(1, type);
  for (std::uint64_t v : words) {
    char bytes[8];
    std::memcpy(bytes, &v, 8);
    s.append(bytes, 8);
  }
  return s;
}

TEST_CASE("oversized lengths are errors before any allocation", "[wire]") {
  // A LEAVE declaring an 8 EiB reason, with none of it present.
  Decoded<Request> d = decode_request(frame('\x85', {1ULL << 63}));
  CHECK(d.state == DecodeState::kError);
  CHECK_THAT(d.error, Catch::Contains("leave reason of 9223372036854775808 bytes exceeds"));
  // A JOIN whose run id is over the name limit.
  d = decode_request(frame('\x80', {5000}));
  CHECK_THAT(d.error, Catch::Contains("run_id of 5000 bytes exceeds the limit of 1024"));
  // Too many failures in one report.
  d = decode_request(frame('\x82', {1, 4097}));
  CHECK(d.state == DecodeState::kError);
  CHECK_THAT(d.error, Catch::Contains("4097 failures exceed the limit of 4096"));
  // Many small fields adding up past the whole-message limit.
  WireLimits tight;
  tight.max_message_bytes = 64;
  d = decode_request(frame('\x85', {100}), tight);
  CHECK_THAT(d.error, Catch::Contains("exceeds the limit"));
}

TEST_CASE("a report declaring many failures but holding few is incomplete, not a crash", "[wire]") {
  const Decoded<Request> d = decode_request(frame('\x82', {1, 4096}));
  CHECK(d.state == DecodeState::kIncomplete);
}

TEST_CASE("a failure's last lines and stack head beyond their bounds are errors", "[wire]") {
  auto decoded = [](std::vector<std::string> last, std::vector<std::string> head) {
    Failure f = sample_failure();
    f.diagnosis = {std::move(last), std::move(head)};
    return decode_request(encode_request(ReportFailure{1, {f}}));
  };
  const std::string full(kDiagnosisLineBytes, 'x');
  const std::vector<std::string> most(kDiagnosisBytes / kDiagnosisLineBytes, full);
  CHECK(decoded(most, most).state == DecodeState::kComplete);
  CHECK(decoded(std::vector<std::string>(kDiagnosisLines, "x"), {}).state ==
        DecodeState::kComplete);
  CHECK_THAT(decoded(std::vector<std::string>(kDiagnosisLines + 1, "x"), {}).error,
             Catch::Contains("41 last lines exceed the limit of 40"));
  CHECK_THAT(decoded({}, {full + "y"}).error,
             Catch::Contains("stack head of 241 bytes exceeds the limit of 240 bytes"));
  std::vector<std::string> over = most;
  over.push_back(full);
  CHECK_THAT(decoded(over, {}).error,
             Catch::Contains("last lines of 4320 bytes exceed the limit of 4096 bytes"));
}

TEST_CASE("a failure's no_restart byte is 0 or 1, the failure's last", "[wire]") {
  std::string bytes = encode_request(ReportFailure{1, {stuck_failure()}});
  CHECK(bytes.back() == 1);
  bytes.back() = 2;
  CHECK_THAT(decode_request(bytes).error, Catch::Contains("failure no_restart flag is 2"));
}

TEST_CASE("unknown types and bad enum bytes are errors naming the byte", "[wire]") {
  CHECK_THAT(decode_request("\x88").error, Catch::Contains("request type 136"));
  CHECK(decode_request("\x87").error.empty());                              // QUERY_WAITING
  CHECK(decode_request("\x8B").state == DecodeState::kIncomplete);          // PROGRESS
  CHECK_THAT(decode_push("\x95").error, Catch::Contains("push type 149"));  // a store reply
  CHECK_THAT(decode_request("\x90").error, Catch::Contains("request type 144"));
  CHECK_THAT(decode_push("\x80").error, Catch::Contains("push type 128"));
  std::string bad_reason = encode_push(StopWorkers{1, StopReason::kNodeLost, "", std::nullopt});
  bad_reason[9] = 4;
  CHECK_THAT(decode_push(bad_reason).error, Catch::Contains("stop reason 4"));
  std::string bad_flag = encode_push(Joined{1, false});
  bad_flag[9] = 2;
  CHECK_THAT(decode_push(bad_flag).error, Catch::Contains("waiting flag is 2"));
  std::string bad_code = encode_push(ErrorEvent{ErrorCode::kTimeout, "x"});
  bad_code[1] = 0;  // kOk is not an error
  CHECK_THAT(decode_push(bad_code).error, Catch::Contains("error code 0"));
}

TEST_CASE("a JOIN without a node rank keeps its old bytes, with one it is JOIN_AT_RANK", "[wire]") {
  JoinRequest join{"r", Config{}, NodeInfo{"k", "a", 1, 2}};
  const std::string plain = encode_request(join);
  CHECK(plain[0] == '\x80');
  join.node_rank = 7;
  const std::string pinned = encode_request(join);
  CHECK(pinned[0] == '\x86');
  CHECK(pinned.substr(1, plain.size() - 1) == plain.substr(1));  // the same fields, then ...
  REQUIRE(pinned.size() == plain.size() + 4);                    // ... u32 node_rank
  std::uint32_t rank = 0;
  std::memcpy(&rank, pinned.data() + plain.size(), sizeof rank);
  CHECK(rank == 7);
  const Decoded<Request> d = decode_request(pinned);
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(std::get<JoinRequest>(d.message).node_rank == 7u);
  CHECK_FALSE(std::get<JoinRequest>(decode_request(plain).message).node_rank.has_value());
}

TEST_CASE("native requests sit in the range protocol.h reserves", "[wire]") {
  CHECK(kFirstRequestType == 0x80);
  CHECK_FALSE(is_native_request_type(0x7F));
  CHECK(is_native_request_type(0x85));
  CHECK_FALSE(is_native_request_type(kFirstPushType));
}

}  // namespace
}  // namespace ddp::rendezvous::membership
