// Protocol encode/decode of every query in both numberings: byte-exact against hand-written
// bytes, round trips, and incomplete input at every split point.
#include "rendezvous/protocol.h"

#include <utility>
#include <vector>

#include "tests/catch.h"
#include "tests/rendezvous/wire_bytes.h"

namespace ddp::rendezvous {
namespace {

using test::byte;
using test::str;
using test::u32;
using test::u64;

struct Case {
  Dialect dialect;
  Request request;
  std::string wire;
};

// Every query of both numberings with its expected bytes.
std::vector<Case> all_cases() {
  const std::string bin("a\0b\xff", 4);  // binary-safe keys and values
  std::vector<Case> c;
  auto legacy = Dialect::kLegacy113;
  auto modern = Dialect::kModern;
  c.push_back(
      {legacy, {.op = Op::kSet, .key = "/k", .value = bin}, byte(0) + str("/k") + str(bin)});
  c.push_back({legacy,
               {.op = Op::kCompareSet, .key = "k", .value = "", .desired = "d"},
               byte(1) + str("k") + str("") + str("d")});
  c.push_back({legacy, {.op = Op::kGet, .key = "k"}, byte(2) + str("k")});
  c.push_back({legacy,
               {.op = Op::kAdd, .key = "init/", .delta = -3},
               byte(3) + str("init/") + u64(static_cast<std::uint64_t>(-3))});
  c.push_back(
      {legacy, {.op = Op::kCheck, .keys = {"a", "bb"}}, byte(4) + u64(2) + str("a") + str("bb")});
  c.push_back({legacy, {.op = Op::kWait, .keys = {"a"}}, byte(5) + u64(1) + str("a")});
  c.push_back({legacy, {.op = Op::kGetNumKeys}, byte(6)});
  c.push_back({legacy, {.op = Op::kWatchKey, .key = "w"}, byte(7) + str("w")});
  c.push_back({legacy, {.op = Op::kDeleteKey, .key = "k"}, byte(8) + str("k")});
  // PyTorch 2.0 and 2.1: the 1.13 numbering with four ops appended.
  c.push_back(
      {legacy, {.op = Op::kAppend, .key = "k", .value = "x"}, byte(9) + str("k") + str("x")});
  c.push_back(
      {legacy, {.op = Op::kMultiGet, .keys = {"a", "b"}}, byte(10) + u64(2) + str("a") + str("b")});
  c.push_back({legacy,
               {.op = Op::kMultiSet, .keys = {"a"}, .values = {"1"}},
               byte(11) + u64(1) + str("a") + str("1")});
  c.push_back({legacy, {.op = Op::kCancelWait}, byte(12)});

  c.push_back({modern, {.op = Op::kValidate, .word = kValidateMagic}, byte(0) + u32(0x3C85F7CE)});
  c.push_back({modern, {.op = Op::kSet, .key = bin, .value = "v"}, byte(1) + str(bin) + str("v")});
  c.push_back({modern,
               {.op = Op::kCompareSet, .key = "k", .value = "e", .desired = "d"},
               byte(2) + str("k") + str("e") + str("d")});
  c.push_back({modern, {.op = Op::kGet, .key = "k"}, byte(3) + str("k")});
  c.push_back({modern, {.op = Op::kAdd, .key = "c", .delta = 7}, byte(4) + str("c") + u64(7)});
  c.push_back({modern, {.op = Op::kCheck, .keys = {"a"}}, byte(5) + u64(1) + str("a")});
  c.push_back(
      {modern, {.op = Op::kWait, .keys = {"a", "b"}}, byte(6) + u64(2) + str("a") + str("b")});
  c.push_back({modern, {.op = Op::kGetNumKeys}, byte(7)});
  c.push_back({modern, {.op = Op::kDeleteKey, .key = "k"}, byte(8) + str("k")});
  c.push_back(
      {modern, {.op = Op::kAppend, .key = "k", .value = "x"}, byte(9) + str("k") + str("x")});
  c.push_back(
      {modern, {.op = Op::kMultiGet, .keys = {"a", "b"}}, byte(10) + u64(2) + str("a") + str("b")});
  c.push_back({modern,
               {.op = Op::kMultiSet, .keys = {"a", "b"}, .values = {"1", ""}},
               byte(11) + u64(2) + str("a") + str("1") + str("b") + str("")});
  c.push_back({modern, {.op = Op::kCancelWait}, byte(12)});
  c.push_back({modern, {.op = Op::kPing, .word = 0xDEADBEEF}, byte(13) + u32(0xDEADBEEF)});
  c.push_back(
      {modern, {.op = Op::kQueuePush, .key = "q", .value = "v"}, byte(14) + str("q") + str("v")});
  c.push_back({modern, {.op = Op::kQueuePop, .key = "q"}, byte(15) + str("q")});
  c.push_back({modern, {.op = Op::kQueueLen, .key = "q"}, byte(16) + str("q")});
  c.push_back({modern, {.op = Op::kList}, byte(17)});
  c.push_back({modern, {.op = Op::kBarrier, .key = "b", .delta = 4}, byte(18) + str("b") + u64(4)});
  return c;
}

const char* dialect_name(Dialect d) { return d == Dialect::kModern ? "modern" : "1.13"; }

TEST_CASE("every query encodes to the hand-written bytes", "[protocol]") {
  for (const auto& c : all_cases()) {
    INFO(dialect_name(c.dialect) << " " << op_name(c.request.op));
    auto encoded = encode_request(c.dialect, c.request);
    REQUIRE(encoded.has_value());
    CHECK(*encoded == c.wire);
  }
}

TEST_CASE("every query decodes from the hand-written bytes", "[protocol]") {
  for (const auto& c : all_cases()) {
    INFO(dialect_name(c.dialect) << " " << op_name(c.request.op));
    // Trailing bytes of a next request must be left alone.
    const std::string input = c.wire + "\x06trailing";
    auto parsed = parse_request(c.dialect, input, Limits{});
    REQUIRE(parsed.state == codec::DecodeState::kComplete);
    CHECK(parsed.consumed == c.wire.size());
    CHECK(parsed.value == c.request);
  }
}

TEST_CASE("a query is incomplete at every split point", "[protocol]") {
  for (const auto& c : all_cases()) {
    INFO(dialect_name(c.dialect) << " " << op_name(c.request.op));
    for (std::size_t cut = 0; cut < c.wire.size(); ++cut) {
      INFO("first " << cut << " bytes");
      auto parsed = parse_request(c.dialect, std::string_view(c.wire).substr(0, cut), Limits{});
      REQUIRE(parsed.state == codec::DecodeState::kIncomplete);
      CHECK(parsed.needed > cut);
      CHECK(parsed.needed <= c.wire.size());
    }
  }
}

TEST_CASE("ops exist only in their own numbering", "[protocol]") {
  CHECK_FALSE(encode_request(Dialect::kLegacy113, {.op = Op::kValidate}).has_value());
  CHECK_FALSE(encode_request(Dialect::kLegacy113, {.op = Op::kList}).has_value());
  CHECK_FALSE(encode_request(Dialect::kLegacy113, {.op = Op::kBarrier}).has_value());
  CHECK_FALSE(encode_request(Dialect::kModern, {.op = Op::kWatchKey}).has_value());
  CHECK(wire_code(Dialect::kLegacy113, Op::kDeleteKey) == 8);
  CHECK(wire_code(Dialect::kModern, Op::kDeleteKey) == 8);
  CHECK(op_from_wire(Dialect::kLegacy113, 7) == Op::kWatchKey);
  CHECK(op_from_wire(Dialect::kModern, 7) == Op::kGetNumKeys);
  CHECK(op_from_wire(Dialect::kLegacy113, 9) == Op::kAppend);  // 2.0 and 2.1
  CHECK(op_from_wire(Dialect::kLegacy113, 12) == Op::kCancelWait);
  CHECK_FALSE(op_from_wire(Dialect::kLegacy113, 13).has_value());
  CHECK_FALSE(encode_request(Dialect::kLegacy113, {.op = Op::kPing}).has_value());
  CHECK(op_from_wire(Dialect::kModern, 18) == Op::kBarrier);  // 2.14
  CHECK_FALSE(op_from_wire(Dialect::kModern, 19).has_value());
}

TEST_CASE("unknown query types are errors, including the native range", "[protocol]") {
  auto legacy = parse_request(Dialect::kLegacy113, byte(13), Limits{});
  CHECK(legacy.state == codec::DecodeState::kError);
  CHECK_THAT(legacy.error, Catch::Contains("unknown query type 13"));
  auto native = parse_request(Dialect::kModern, byte(0x80) + "xyz", Limits{});
  CHECK(native.state == codec::DecodeState::kError);
  CHECK_THAT(native.error, Catch::Contains("native"));
}

TEST_CASE("VALIDATE with a wrong magic number is an error", "[protocol]") {
  auto parsed = parse_request(Dialect::kModern, byte(0) + u32(0x12345678), Limits{});
  CHECK(parsed.state == codec::DecodeState::kError);
  CHECK_THAT(parsed.error, Catch::Contains("magic"));
}

TEST_CASE("dialect detection from the first bytes", "[protocol]") {
  const std::string preamble("\x00\xCE\xF7\x85\x3C", 5);
  CHECK(detect_dialect("") == DialectGuess::kNeedMore);
  for (std::size_t n = 1; n < preamble.size(); ++n) {
    CHECK(detect_dialect(preamble.substr(0, n)) == DialectGuess::kNeedMore);
  }
  CHECK(detect_dialect(preamble) == DialectGuess::kModern);
  CHECK(detect_dialect(preamble + "\x01") == DialectGuess::kModern);
  CHECK(detect_dialect(byte(0) + str("/key")) == DialectGuess::kLegacy113);  // 1.13 SET
  CHECK(detect_dialect(byte(6)) == DialectGuess::kLegacy113);                // 1.13 GETNUMKEYS
  CHECK(detect_dialect(std::string("\x00\xCE\xF7\x00", 4)) == DialectGuess::kLegacy113);
}

TEST_CASE("reply helpers write little-endian fields", "[protocol]") {
  std::string out;
  codec::put<std::uint8_t>(out, 3);
  codec::put<std::int64_t>(out, -1);
  codec::put<std::uint32_t>(out, 0x01020304);
  codec::put_str(out, "ab");
  CHECK(out == byte(3) + u64(~std::uint64_t{0}) + u32(0x01020304) + str("ab"));
  codec::Reader in(out);
  CHECK(in.get<std::uint8_t>() == 3);
  CHECK(in.get<std::int64_t>() == -1);
  CHECK(in.get<std::uint32_t>() == 0x01020304);
  CHECK(in.str("value", 2) == "ab");
  CHECK(in.ok());
  CHECK(in.remaining() == 0);
  CHECK(in.get<std::uint64_t>() == 0);  // past the end: a stream needs 8 more bytes
  CHECK(in.needed() == out.size() + 8);
}

}  // namespace
}  // namespace ddp::rendezvous
