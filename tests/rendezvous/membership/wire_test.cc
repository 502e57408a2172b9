// Native wire messages: byte layout, round trips of every request and push, truncated input
// (every prefix is incomplete, never an error or a crash), oversized and malformed input, the
// records of protocol 2 read by older and newer peers, the version handshake and protocol 1's
// ERROR.
#include "rendezvous/membership/wire.h"

#include <cstring>
#include <optional>

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
  f.traceback = "Traceback (most recent call last):\n  File \"x.py\"\nRuntimeError: boom";
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
    CHECK(d.value == r);
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
    CHECK(d.value == p);
    CHECK(d.consumed == bytes.size());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      REQUIRE(decode_push(std::string_view(bytes).substr(0, n)).state == DecodeState::kIncomplete);
    }
  }
}

TEST_CASE("byte layout: type, u32 length, host-order integers and u64-length strings", "[wire]") {
  const std::string b = encode_request(WorkersStopped{0x0102030405060708ULL});
  CHECK(b == std::string("\x83\x08\0\0\0\x08\x07\x06\x05\x04\x03\x02\x01", 13));
  const std::string l = encode_request(Leave{"ab"});
  CHECK(l == std::string("\x85\x0A\0\0\0\x02\0\0\0\0\0\0\0ab", 15));
  const std::string j = encode_push(Joined{1, true});
  CHECK(j == std::string("\x90\x09\0\0\0\x01\0\0\0\0\0\0\0\x01", 14));
  CHECK(encode_request(Heartbeat{}) == std::string("\x81\0\0\0\0", 5));
}

// `u32 n | fields`, as raw bytes.
std::string record(std::string_view fields) {
  std::string s;
  codec::put<std::uint32_t>(s, static_cast<std::uint32_t>(fields.size()));
  s.append(fields);
  return s;
}

// A native message of type `type` whose record holds `fields`.
std::string framed(char type, std::string_view fields) { return type + record(fields); }

// The fields of native message `message` (its record's bytes).
std::string fields_of(std::string_view message) { return std::string(message.substr(5)); }

// `type` then, as its record, the u64 values as raw bytes.
std::string frame(char type, std::initializer_list<std::uint64_t> words) {
  std::string fields;
  for (std::uint64_t v : words) codec::put(fields, v);
  return framed(type, fields);
}

// The record of failure `f`, as REPORT_FAILURE carries it (u32 n | fields).
std::string failure_record(const Failure& f) {
  // REPORT_FAILURE: type, u32 n, u64 round, u64 count, then the one failure's record.
  return encode_request(ReportFailure{1, {f}}).substr(1 + 4 + 8 + 8);
}
// The fields of that record.
std::string failure_fields(const Failure& f) { return failure_record(f).substr(4); }

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
  // A message whose record declares more than the limit: refused from its 5-byte header.
  for (const std::string& header : {std::string("\x85\x41\0\0\0", 5),     // LEAVE of 65 bytes
                                    std::string("\x90\0\0\0\x80", 5)}) {  // JOINED of 2 GiB
    d = decode_request(header, tight);
    CHECK(d.state == DecodeState::kError);
    CHECK_THAT(d.error, Catch::Contains("exceeds the limit of 64 bytes"));
    CHECK(decode_push(header, tight).state == DecodeState::kError);
  }
}

TEST_CASE("a record holding fewer list entries than it declares is an error, not defaults",
          "[wire]") {
  // A count is no field an older sender leaves out: a sender that wrote "4096 failures" wrote
  // 4096 records. Read as defaults, 21 bytes would become 4096 made-up failures.
  const Decoded<Request> failures = decode_request(frame('\x82', {1, 4096}));
  CHECK(failures.state == DecodeState::kError);
  const std::string one_of_two = fields_of(frame('\x82', {1, 2})) + failure_record(Failure{});
  CHECK(decode_request(framed('\x82', one_of_two)).state == DecodeState::kError);
  const Decoded<Request> ranks = decode_request(frame('\x8B', {1, 5, 1 << 16}));
  CHECK(ranks.state == DecodeState::kError);
}

TEST_CASE("a message is incomplete until its whole record is at hand", "[wire]") {
  // A report whose record declares 4096 failures' worth of bytes: the decoder waits for them
  // without reserving anything, and asks for exactly the whole message.
  const std::string head("\x82", 1);
  std::string bytes = frame('\x82', {1, 1});
  const std::uint32_t n = 16 + 4096 * 100;
  std::memcpy(bytes.data() + 1, &n, sizeof n);
  const Decoded<Request> d = decode_request(bytes);
  CHECK(d.state == DecodeState::kIncomplete);
  CHECK(d.needed == 5 + n);
  const Decoded<Request> h = decode_request(head);
  CHECK(h.state == DecodeState::kIncomplete);
  CHECK(h.needed == 5);
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

TEST_CASE("a failure's no_restart byte is 0 or 1", "[wire]") {
  const Failure stuck = stuck_failure();
  std::string bytes = encode_request(ReportFailure{1, {stuck}});
  char& no_restart = bytes[bytes.size() - stuck.traceback.size() - 8 - 1];  // before traceback
  CHECK(no_restart == 1);
  no_restart = 2;
  CHECK_THAT(decode_request(bytes).error, Catch::Contains("failure no_restart flag is 2"));
}

TEST_CASE("unknown types and bad enum bytes are errors naming the byte", "[wire]") {
  CHECK(decode_request("\x88").state == DecodeState::kIncomplete);  // the type needs its record
  CHECK_THAT(decode_request(framed('\x88', "")).error, Catch::Contains("request type 136"));
  CHECK(decode_request(framed('\x87', "")).error.empty());  // QUERY_WAITING
  CHECK(decode_request(framed('\x87', "")).state == DecodeState::kComplete);
  CHECK_THAT(decode_push(framed('\x95', "")).error,
             Catch::Contains("push type 149"));  // a store reply
  CHECK_THAT(decode_request(framed('\x90', "")).error, Catch::Contains("request type 144"));
  CHECK_THAT(decode_push(framed('\x80', "")).error, Catch::Contains("push type 128"));
  // JOIN_AT_RANK (protocol 1) is gone: JOIN carries the node rank.
  CHECK_THAT(decode_request(framed('\x86', "")).error, Catch::Contains("request type 134"));
  // HELLO (0x8A) and VERSION (0x99) are the handshake's, read by decode_hello/decode_version.
  CHECK_THAT(decode_request(encode_hello(this_version())).error,
             Catch::Contains("request type 138"));
  CHECK_THAT(decode_push(encode_version(this_version())).error, Catch::Contains("push type 153"));
  std::string bad_reason = encode_push(StopWorkers{1, StopReason::kNodeLost, "", std::nullopt});
  bad_reason[13] = 4;
  CHECK_THAT(decode_push(bad_reason).error, Catch::Contains("stop reason 4"));
  std::string bad_flag = encode_push(Joined{1, false});
  bad_flag[13] = 2;
  CHECK_THAT(decode_push(bad_flag).error, Catch::Contains("waiting flag is 2"));
  std::string bad_code = encode_push(ErrorEvent{ErrorCode::kTimeout, "x"});
  bad_code[5] = 0;  // kOk is not an error
  CHECK_THAT(decode_push(bad_code).error, Catch::Contains("error code 0"));
}

TEST_CASE("a JOIN ends with u8 has_node_rank, u32 node_rank", "[wire]") {
  JoinRequest join{"r", Config{}, NodeInfo{"k", "a", 1, 2}};
  const std::string plain = encode_request(join);
  CHECK(plain[0] == '\x80');
  join.node_rank = 7;
  const std::string pinned = encode_request(join);
  CHECK(pinned[0] == '\x80');
  REQUIRE(pinned.size() == plain.size());
  const std::size_t tail = plain.size() - 5;
  CHECK(pinned.substr(0, tail) == plain.substr(0, tail));  // the same fields, then ...
  CHECK(plain.substr(tail) == std::string(5, '\0'));       // ... no node rank
  CHECK(pinned.substr(tail) == std::string("\x01\x07\0\0\0", 5));
  const Decoded<Request> d = decode_request(pinned);
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(std::get<JoinRequest>(d.value).node_rank == 7u);
  CHECK_FALSE(std::get<JoinRequest>(decode_request(plain).value).node_rank.has_value());
  join.node_rank = 0;  // rank 0 is a rank
  CHECK(std::get<JoinRequest>(decode_request(encode_request(join)).value).node_rank == 0u);
  std::string bad_flag = pinned;
  bad_flag[tail] = 2;
  CHECK_THAT(decode_request(bad_flag).error, Catch::Contains("has_node_rank flag is 2"));
}

TEST_CASE("a JOIN's node rank without its flag is an error, not silently dropped", "[wire]") {
  // Protocol 1 could not say this (JOIN_AT_RANK was its own type); accepting it would decode
  // bytes no encoder writes (has_node_rank 0, node_rank 5) as an unpinned JOIN.
  std::string bytes = encode_request(JoinRequest{"r", Config{}, NodeInfo{"k", "a", 1, 2}});
  bytes[bytes.size() - 4] = 5;
  CHECK(decode_request(bytes).state == DecodeState::kError);
}

// ---- protocol 2's records, read by a newer and an older peer -------------------------------

TEST_CASE("a newer sender's fields after those this build knows are skipped", "[wire]") {
  const std::string extra("\x01\x02new field\0", 12);
  for (const Request& r : sample_requests()) {
    const std::string newer = framed(encode_request(r)[0], fields_of(encode_request(r)) + extra);
    const Decoded<Request> d = decode_request(newer + "next");
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.value == r);
    CHECK(d.consumed == newer.size());
  }
  for (const Payload& p : sample_pushes()) {
    const std::string newer = framed(encode_push(p)[0], fields_of(encode_push(p)) + extra);
    const Decoded<Payload> d = decode_push(newer + "next");
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.value == p);
    CHECK(d.consumed == newer.size());
  }
}

TEST_CASE("an older sender's missing last fields read as their defaults", "[wire]") {
  // A JOIN from before has_node_rank and node_rank (5 bytes): unpinned.
  JoinRequest join = std::get<JoinRequest>(sample_requests()[1]);
  REQUIRE(join.node_rank.has_value());
  std::string fields = fields_of(encode_request(join));
  const std::string older = framed('\x80', fields.substr(0, fields.size() - 5));
  Decoded<Request> d = decode_request(older + "next");
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(d.consumed == older.size());
  JoinRequest expected = join;
  expected.node_rank.reset();
  CHECK(std::get<JoinRequest>(d.value) == expected);
  // ... and from before exclude_straggler too (1 byte more): false.
  REQUIRE(join.config.exclude_straggler);
  d = decode_request(framed('\x80', fields.substr(0, fields.size() - 6)));
  REQUIRE(d.state == DecodeState::kComplete);
  expected.config.exclude_straggler = false;
  CHECK(std::get<JoinRequest>(d.value) == expected);
  // An empty record: every field its default.
  d = decode_request(framed('\x85', ""));
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(d.value == Request{Leave{}});
  const Decoded<Payload> rc = decode_push(framed('\x91', ""));
  REQUIRE(rc.state == DecodeState::kComplete);
  CHECK(rc.value == Payload{RoundComplete{}});
  // A ROUND_COMPLETE without its store port (the last u16).
  const RoundComplete round{2, 1, 3, 4, 8, 24, 32, "10.1.2.3", 29500};
  const std::string round_fields = fields_of(encode_push(round));
  const Decoded<Payload> no_port =
      decode_push(framed('\x91', round_fields.substr(0, round_fields.size() - 2)));
  REQUIRE(no_port.state == DecodeState::kComplete);
  RoundComplete without_port = round;
  without_port.store_port = 0;
  CHECK(no_port.value == Payload{without_port});
}

TEST_CASE("a field cut by its record's end is an error", "[wire]") {
  JoinRequest join = std::get<JoinRequest>(sample_requests()[1]);
  const std::string fields = fields_of(encode_request(join));
  // Inside node_rank (the u32 after has_node_rank = 1), and inside the u8 before it.
  for (std::size_t drop : {1, 2, 3}) {
    const Decoded<Request> d =
        decode_request(framed('\x80', fields.substr(0, fields.size() - drop)));
    CHECK(d.state == DecodeState::kError);
    CHECK_THAT(d.error, Catch::Contains("runs past the end of its record"));
  }
  // A str whose bytes are cut: LEAVE "abc" with one byte of its reason gone.
  const std::string leave = fields_of(encode_request(Leave{"abc"}));
  CHECK_THAT(decode_request(framed('\x85', leave.substr(0, leave.size() - 1))).error,
             Catch::Contains("runs past the end of its record"));
  // A str's length cut: the u64 half there.
  CHECK_THAT(decode_request(framed('\x85', leave.substr(0, 4))).error,
             Catch::Contains("runs past the end of its record"));
  // Every cut of every sample's record: complete (at a field boundary) or an error, never
  // incomplete (the record is whole) and never past the message.
  for (const Request& r : sample_requests()) {
    const std::string all = fields_of(encode_request(r));
    for (std::size_t n = 0; n < all.size(); ++n) {
      const std::string cut = framed(encode_request(r)[0], all.substr(0, n));
      const Decoded<Request> c = decode_request(cut + "next");
      REQUIRE(c.state != DecodeState::kIncomplete);
      if (c.state == DecodeState::kComplete) CHECK(c.consumed == cut.size());
    }
  }
  for (const Payload& p : sample_pushes()) {
    const std::string all = fields_of(encode_push(p));
    for (std::size_t n = 0; n < all.size(); ++n) {
      const std::string cut = framed(encode_push(p)[0], all.substr(0, n));
      const Decoded<Payload> c = decode_push(cut + "next");
      REQUIRE(c.state != DecodeState::kIncomplete);
      if (c.state == DecodeState::kComplete) CHECK(c.consumed == cut.size());
    }
  }
}

TEST_CASE("a failure record's unknown trailing fields are skipped, the next failure still decodes",
          "[wire]") {
  const Failure first = sample_failure();
  const Failure second = hung_failure(41);
  const std::string newer = record(failure_fields(first) + "a newer field");
  std::string fields;
  codec::put<std::uint64_t>(fields, 9);  // round
  codec::put<std::uint64_t>(fields, 2);  // failures
  const std::string report = framed('\x82', fields + newer + failure_record(second));
  const Decoded<Request> d = decode_request(report + "next");
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(d.consumed == report.size());
  CHECK(d.value == Request{ReportFailure{9, {first, second}}});
  // In a push, the fields after the failure still decode: JOB_FINISHED's goodput.
  const JobFinished finished{93, "no progress", stuck_failure(), Goodput{4500ms, 9000ms}, true};
  std::string job;
  codec::put<std::int32_t>(job, finished.exit_code);
  codec::put_str(job, finished.reason);
  codec::put<std::uint8_t>(job, 1);  // has_failure
  job += record(failure_fields(*finished.root_cause) + std::string(7, '\x7f'));
  codec::put<std::int64_t>(job, 4500);
  codec::put<std::int64_t>(job, 9000);
  codec::put<std::uint8_t>(job, 1);  // no_progress
  const Decoded<Payload> p = decode_push(framed('\x93', job));
  REQUIRE(p.state == DecodeState::kComplete);
  CHECK(p.value == Payload{finished});
  // An older sender's failure, from before no_restart and traceback (its last fields): it may
  // restart, and has no traceback.
  const Failure stuck = stuck_failure();
  const std::string all_fields = failure_fields(stuck);
  const std::string old_fields =
      all_fields.substr(0, all_fields.size() - 1 - 8 - stuck.traceback.size());
  const std::string older = framed('\x82', fields + record(old_fields) + failure_record(second));
  const Decoded<Request> o = decode_request(older);
  REQUIRE(o.state == DecodeState::kComplete);
  Failure without_traceback = sample_failure();
  without_traceback.traceback.clear();
  CHECK(o.value == Request{ReportFailure{9, {without_traceback, second}}});
  // A failure record cut inside a field is an error, though the message around it is whole.
  const std::string cut =
      framed('\x82',
             fields + record(old_fields.substr(0, old_fields.size() - 1)) + failure_record(second));
  CHECK_THAT(decode_request(cut).error, Catch::Contains("runs past the end of its record"));
}

// ---- the version handshake and protocol 1's ERROR -----------------------------------------

TEST_CASE("HELLO and VERSION round-trip and every prefix is incomplete", "[wire][version]") {
  const Version v{2, 2, "0.2.0"};
  const std::string hello = encode_hello(v);
  // u8 0x8A | u32 21 | u32 protocol, u32 oldest, str ddprun_version
  CHECK(hello == std::string("\x8A\x15\0\0\0\x02\0\0\0\x02\0\0\0\x05\0\0\0\0\0\0\0"
                             "0.2.0",
                             26));
  const std::string version = encode_version(v);
  CHECK(version == '\x99' + hello.substr(1));
  for (const auto& [bytes, decode] :
       {std::pair{hello, &decode_hello}, std::pair{version, &decode_version}}) {
    const Decoded<Version> d = decode(bytes + "next", WireLimits{});
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.value == v);
    CHECK(d.consumed == bytes.size());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      const Decoded<Version> p = decode(bytes.substr(0, n), WireLimits{});
      REQUIRE(p.state == DecodeState::kIncomplete);
      CHECK(p.needed > n);
      CHECK(p.needed <= bytes.size());
    }
  }
  CHECK_THAT(decode_version(hello).error, Catch::Contains("expected message type 153, got 138"));
  CHECK_THAT(decode_hello(version).error, Catch::Contains("expected message type 138, got 153"));
  // A newer agent's HELLO with more fields; an over-long release name.
  const Decoded<Version> newer = decode_hello(framed('\x8A', fields_of(hello) + "more"));
  REQUIRE(newer.state == DecodeState::kComplete);
  CHECK(newer.value == v);
  CHECK(decode_hello(encode_hello(Version{3, 2, std::string(1025, 'x')})).state ==
        DecodeState::kError);
  // This build's own: protocol 2, which it still speaks as its oldest.
  CHECK(this_version().protocol == kProtocol);
  CHECK(this_version().oldest == kOldestProtocol);
  CHECK(kOldestProtocol <= kProtocol);
  CHECK_FALSE(this_version().ddprun.empty());
  CHECK(compatible(this_version(), this_version()));
}

TEST_CASE("compatible(): each side's protocol is at least the other's oldest", "[wire][version]") {
  const Version v2{2, 2, "0.2.0"};
  const Version v3{3, 2, "0.3.0"};  // speaks 2 and 3
  const Version v4{4, 3, "0.4.0"};  // dropped 2
  CHECK(compatible(v2, v2));
  CHECK(compatible(v2, v3));  // an older agent, a newer daemon that still speaks 2
  CHECK(compatible(v3, v2));  // a newer agent, an older daemon
  CHECK(compatible(v3, v4));
  CHECK(compatible(v4, v3));
  CHECK_FALSE(compatible(v2, v4));  // the agent is too old for the daemon
  CHECK_FALSE(compatible(v4, v2));  // the daemon is too old for the agent
}

TEST_CASE("skew_message names both versions and the side to upgrade", "[wire][version]") {
  const Version v2{2, 2, "0.2.0"};
  const Version v4{4, 3, "0.4.0"};
  const std::string agent_older = skew_message(v2, v4, "rdzv-host:29400");
  CHECK_THAT(agent_older,
             Catch::Contains("this node's agent is ddprun 0.2.0 (native protocol 2)") &&
                 Catch::Contains("daemon at rdzv-host:29400 is ddprun 0.4.0 "
                                 "(native protocol 4)") &&
                 Catch::Contains("upgrade ddprun on this node"));
  const std::string daemon_older = skew_message(v4, v2, "");
  CHECK_THAT(daemon_older, Catch::Contains("ddprun 0.4.0 (native protocol 4)") &&
                               Catch::Contains("ddprun 0.2.0 (native protocol 2)") &&
                               Catch::Contains("upgrade ddprun on the daemon's host"));
  CHECK_THAT(daemon_older, !Catch::Contains(" at "));  // no address given
  // A protocol-1 daemon (it answered HELLO with protocol 1's ERROR): it has no Version.
  const std::string v1_daemon = skew_message(v2, std::nullopt, "h:1");
  CHECK_THAT(v1_daemon, Catch::Contains("daemon at h:1 is ddprun 0.1 (native protocol 1)") &&
                            Catch::Contains("ddprun 0.2.0 (native protocol 2)") &&
                            Catch::Contains("upgrade ddprun on the daemon's host"));
  // A protocol-1 agent (it sent no HELLO): the daemon's refusal.
  const std::string v1_agent = skew_message(std::nullopt, v2, "");
  CHECK_THAT(v1_agent, Catch::Contains("agent is ddprun 0.1 (native protocol 1)") &&
                           Catch::Contains("upgrade ddprun on this node"));
  // A release name the peer did not send.
  CHECK_THAT(skew_message(Version{2, 2, ""}, v4, ""),
             Catch::Contains("ddprun ? (native protocol 2)"));
}

TEST_CASE("protocol 1's ERROR round-trips: no length after the type byte", "[wire][version]") {
  const std::string bytes = encode_legacy_error(ErrorCode::kProtocol, "upgrade");
  CHECK(bytes == std::string("\x94\x04\x07\0\0\0\0\0\0\0upgrade", 17));
  const Decoded<ErrorEvent> d = decode_legacy_error(bytes + "next");
  REQUIRE(d.state == DecodeState::kComplete);
  CHECK(d.value == ErrorEvent{ErrorCode::kProtocol, "upgrade"});
  CHECK(d.consumed == bytes.size());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const Decoded<ErrorEvent> p = decode_legacy_error(bytes.substr(0, n));
    REQUIRE(p.state == DecodeState::kIncomplete);
    CHECK(p.needed > n);
    CHECK(p.needed <= bytes.size());
  }
  CHECK_THAT(decode_legacy_error(encode_version(this_version())).error,
             Catch::Contains("not an ERROR"));
  WireLimits tight;
  tight.max_text_bytes = 4;
  CHECK_THAT(decode_legacy_error(bytes, tight).error,
             Catch::Contains("error message of 7 bytes exceeds the limit of 4 bytes"));
}

TEST_CASE("native requests sit in the range protocol.h reserves", "[wire]") {
  CHECK(kFirstRequestType == 0x80);
  CHECK_FALSE(is_native_request_type(0x7F));
  CHECK(is_native_request_type(0x85));
  CHECK_FALSE(is_native_request_type(kFirstPushType));
}

}  // namespace
}  // namespace ddp::rendezvous::membership
