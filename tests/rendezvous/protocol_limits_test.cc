// Limits are enforced from the declared lengths alone, before any allocation for them.
#include <atomic>
#include <cstdlib>
#include <new>

#include "rendezvous/protocol.h"
#include "tests/catch.h"
#include "tests/rendezvous/wire_bytes.h"

// Counts the bytes this test binary allocates, so a test can bound what a parse allocated.
namespace {
std::atomic<std::size_t> g_allocated{0};
}

void* operator new(std::size_t n) {
  g_allocated += n;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace ddp::rendezvous {
namespace {

using test::byte;
using test::str;
using test::u64;

// Parses and returns the result plus the bytes allocated while parsing.
std::pair<codec::Decoded<Request>, std::size_t> parse_counting(Dialect d, const std::string& in,
                                                               const Limits& limits) {
  const std::size_t before = g_allocated;
  codec::Decoded<Request> r = parse_request(d, in, limits);
  return {std::move(r), g_allocated - before};
}

TEST_CASE("a declared 1 GB key is rejected from its 8-byte length", "[protocol][limits]") {
  const std::string header = byte(0) + u64(std::uint64_t{1} << 30);  // 1.13 SET, key 1 GiB
  auto [r, allocated] = parse_counting(Dialect::kLegacy113, header, Limits{});
  CHECK(r.state == codec::DecodeState::kError);
  CHECK_THAT(r.error, Catch::Contains("1073741824") && Catch::Contains("8192"));
  CHECK(allocated < 4096);  // the error text only
}

TEST_CASE("a declared 1 GB value is rejected from its length", "[protocol][limits]") {
  const std::string header = byte(1) + str("k") + u64(std::uint64_t{1} << 30);  // modern SET
  auto [r, allocated] = parse_counting(Dialect::kModern, header, Limits{});
  CHECK(r.state == codec::DecodeState::kError);
  CHECK_THAT(r.error, Catch::Contains("value of 1073741824 bytes"));
  CHECK(allocated < 4096);
}

TEST_CASE("a huge key count is rejected before reserving", "[protocol][limits]") {
  for (std::uint8_t op : {4, 5}) {  // 1.13 CHECK, WAIT
    auto [r, allocated] =
        parse_counting(Dialect::kLegacy113, byte(op) + u64(std::uint64_t{1} << 40), Limits{});
    CHECK(r.state == codec::DecodeState::kError);
    CHECK_THAT(r.error,
               Catch::Contains("1099511627776 keys in one query exceed the limit of 131072"));
    CHECK(allocated < 4096);
  }
  auto multi_set = parse_request(Dialect::kModern, byte(11) + u64(131073), Limits{});
  CHECK(multi_set.state == codec::DecodeState::kError);
}

TEST_CASE("configured limits apply exactly at the boundary", "[protocol][limits]") {
  Limits small;
  small.max_key_bytes = 4;
  small.max_value_bytes = 8;
  small.max_keys_per_query = 2;
  CHECK(parse_request(Dialect::kModern, byte(1) + str("abcd") + str("12345678"), small).state ==
        codec::DecodeState::kComplete);
  CHECK(parse_request(Dialect::kModern, byte(1) + str("abcde") + str(""), small).state ==
        codec::DecodeState::kError);
  CHECK(parse_request(Dialect::kModern, byte(1) + str("k") + str("123456789"), small).state ==
        codec::DecodeState::kError);
  CHECK(parse_request(Dialect::kModern, byte(6) + u64(2) + str("a") + str("b"), small).state ==
        codec::DecodeState::kComplete);
  CHECK(parse_request(Dialect::kModern, byte(6) + u64(3), small).state ==
        codec::DecodeState::kError);
}

TEST_CASE("a request larger than max_request_bytes is rejected while incomplete",
          "[protocol][limits]") {
  Limits limits;
  limits.max_request_bytes = 1024;
  // MULTI_SET whose second value would push the request past 1 KiB.
  const std::string partial =
      byte(11) + u64(2) + str("a") + str(std::string(600, 'x')) + str("b") + u64(600);
  auto r = parse_request(Dialect::kModern, partial, limits);
  CHECK(r.state == codec::DecodeState::kError);
  CHECK_THAT(r.error, Catch::Contains("exceeds the limit of 1024"));
}

TEST_CASE("an incomplete large value reports how many bytes it needs", "[protocol][limits]") {
  const std::string header = byte(1) + str("k") + u64(1000);
  auto r = parse_request(Dialect::kModern, header + std::string(10, 'v'), Limits{});
  REQUIRE(r.state == codec::DecodeState::kIncomplete);
  CHECK(r.needed == header.size() + 1000);
}

}  // namespace
}  // namespace ddp::rendezvous
