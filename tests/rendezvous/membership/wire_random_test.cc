// Random mutations of valid messages and random garbage: the decoders never crash or read
// out of bounds (run under ASan/UBSan too), and whatever they accept is canonical. A record may
// hold fields this build does not know (skipped) or lack its last ones (defaults), so accepted
// bytes need not be the encoding of what they decode to; but that encoding decodes to the same
// message, a message always ends where its length says, and a message as long as its encoding
// after one edit (nothing skipped or defaulted) is exactly that encoding.
#include <cstring>
#include <random>

#include "rendezvous/membership/wire.h"
#include "tests/catch.h"

namespace ddp::rendezvous::membership {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> seeds() {
  // Built field by field in one initializer: GCC 12 warns (-Wrestrict, a known false
  // positive) on assigning a short literal to a string member here.
  const Failure f{"n",          0,  0,     0,  -11, 0, WallTime(123us), "", "m", false,
                  std::nullopt, {}, false, "t"};
  Config c;
  c.max_nodes = 8;
  return {encode_request(JoinRequest{"r", c, NodeInfo{"k", "a", 1, 2}}),
          encode_request(JoinRequest{"r", c, NodeInfo{"k", "a", 1, 2}, 5}),
          encode_request(Heartbeat{}),
          encode_request(ReportFailure{1, {f, f}}),
          encode_request(WorkersStopped{2}),
          encode_request(ReportSuccess{3}),
          encode_request(Leave{"x"}),
          encode_request(QueryWaiting{}),
          encode_request(Progress{4, Duration(900), {{0, 7, 30us}, {1, 7, 31us}}}),
          encode_push(Joined{1, true}),
          encode_push(RoundComplete{1, 0, 0, 1, 1, 0, 1, "a", 2}),
          encode_push(StopWorkers{1, StopReason::kWorkerFailed, "d", f}),
          encode_push(JobFinished{3, "r", f, Goodput{Duration(5), Duration(9)}}),
          encode_push(ErrorEvent{ErrorCode::kProtocol, "e"}),
          encode_push(Waiting{2, 2, 4, Duration(100), Duration(7)}),
          encode_push(Straggler{3, 17, 300us, 100us, 5, true}),
          encode_hello(Version{2, 2, "0.2.0"}),
          encode_version(Version{3, 2, "0.3.0"})};
}

// `one_edit`: `input` is a seed with one edit (see above).
template <typename Decode, typename Encode>
void check_one(const std::string& input, bool one_edit, Decode decode, Encode encode) {
  const auto d = decode(input);
  switch (d.state) {
    case DecodeState::kComplete: {
      REQUIRE(d.consumed <= input.size());
      REQUIRE(input.size() >= 5);
      std::uint32_t n = 0;
      std::memcpy(&n, input.data() + 1, sizeof n);
      REQUIRE(d.consumed == 5 + std::size_t{n});
      const std::string again = encode(d.value);
      const auto redecoded = decode(again);
      REQUIRE(redecoded.state == DecodeState::kComplete);
      REQUIRE(redecoded.consumed == again.size());
      REQUIRE(redecoded.value == d.value);
      if (one_edit && again.size() == d.consumed) REQUIRE(again == input.substr(0, d.consumed));
      break;
    }
    case DecodeState::kIncomplete:
      REQUIRE(d.needed > input.size());
      break;
    case DecodeState::kError:
      REQUIRE_FALSE(d.error.empty());
      break;
  }
}

TEST_CASE("mutated and random input decodes safely and canonically", "[wire]") {
  std::mt19937_64 rng(20261121);
  const std::vector<std::string> base = seeds();
  auto decode_req = [](std::string_view in) { return decode_request(in); };
  auto decode_psh = [](std::string_view in) { return decode_push(in); };
  auto decode_hel = [](std::string_view in) { return decode_hello(in); };
  auto decode_ver = [](std::string_view in) { return decode_version(in); };
  auto check_all = [&](const std::string& s, bool one_edit) {
    check_one(s, one_edit, decode_req, [](const Request& r) { return encode_request(r); });
    check_one(s, one_edit, decode_psh, [](const Payload& p) { return encode_push(p); });
    check_one(s, one_edit, decode_hel, [](const Version& v) { return encode_hello(v); });
    check_one(s, one_edit, decode_ver, [](const Version& v) { return encode_version(v); });
  };
  for (int i = 0; i < 20000; ++i) {
    std::string s = base[rng() % base.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      switch (rng() % 4) {
        case 0:  // flip a byte
          s[rng() % s.size()] = static_cast<char>(rng());
          break;
        case 1:  // truncate
          s.resize(rng() % s.size());
          break;
        case 2:  // insert a byte
          s.insert(s.begin() + static_cast<long>(rng() % (s.size() + 1)), static_cast<char>(rng()));
          break;
        default:  // small length-ish value at a random offset
          if (s.size() > 8) s[rng() % (s.size() - 8)] = static_cast<char>(rng() % 16);
      }
    }
    check_all(s, edits == 1);
  }
  for (int i = 0; i < 5000; ++i) {  // pure garbage starting in the native range
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    if (!s.empty()) s[0] = static_cast<char>(0x80 + rng() % 0x20);
    check_all(s, false);
  }
}

}  // namespace
}  // namespace ddp::rendezvous::membership
