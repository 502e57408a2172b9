// Framer: native rendezvous requests and TCPStore queries on one connection, told apart at
// request boundaries without sockets. Bytes are hand-written (wire_bytes.h) where the test
// is about the TCPStore side, and encoded by membership/wire.h for native requests (whose
// byte layout membership_test pins down).
#include "rendezvous/framer.h"

#include <random>
#include <string>
#include <vector>

#include "rendezvous/membership/wire.h"
#include "tests/catch.h"
#include "tests/rendezvous/wire_bytes.h"

namespace ddp::rendezvous {
namespace {

using test::byte;
using test::str;
using test::u32;
using test::u64;

const std::string kValidate = byte(0) + u32(kValidateMagic);
// What every agent sends first on a native connection (membership/wire.h).
const std::string kHello =
    rendezvous::membership::encode_hello(rendezvous::membership::this_version());

rendezvous::membership::JoinRequest sample_join() {
  rendezvous::membership::JoinRequest join;
  join.run_id = "job";
  join.node = {"host-a:1", "10.0.0.1", 29500, 2};
  return join;
}

// Feeds `stream` through one Framer as a session would and returns the frames in order.
std::vector<Frame> split(Framer& framer, const std::string& stream) {
  std::vector<Frame> frames;
  std::size_t used = 0;
  while (used < stream.size()) {
    Frame f = framer.next(std::string_view(stream).substr(used));
    if (f.kind == FrameKind::kIncomplete || f.kind == FrameKind::kError) {
      frames.push_back(std::move(f));
      break;
    }
    used += f.consumed;
    frames.push_back(std::move(f));
  }
  return frames;
}

TEST_CASE("store queries and native requests interleave on one modern connection", "[framer]") {
  const std::string stream =
      kValidate + byte(1) + str("k") + str("v") +              // SET
      kHello +                                                 // HELLO
      rendezvous::membership::encode_request(sample_join()) +  // JOIN
      byte(3) + str("k") +                                     // GET
      rendezvous::membership::encode_request(rendezvous::membership::Heartbeat{}) + byte(4) +
      str("n") + u64(1);  // ADD
  Framer framer{Limits{}};
  CHECK_FALSE(framer.native_mode());
  auto frames = split(framer, stream);
  REQUIRE(frames.size() == 7);
  CHECK(frames[0].kind == FrameKind::kStore);
  CHECK(frames[0].store.op == Op::kValidate);
  CHECK(frames[1].store.op == Op::kSet);
  CHECK(frames[2].kind == FrameKind::kHello);
  CHECK(frames[2].consumed == kHello.size());
  REQUIRE(frames[3].kind == FrameKind::kNative);
  CHECK(std::get<rendezvous::membership::JoinRequest>(frames[3].native) == sample_join());
  CHECK(frames[4].kind == FrameKind::kStore);
  CHECK(frames[4].store.op == Op::kGet);
  CHECK(frames[4].store.key == "k");
  CHECK(frames[5].kind == FrameKind::kNative);
  CHECK(std::holds_alternative<rendezvous::membership::Heartbeat>(frames[5].native));
  CHECK(frames[6].store.op == Op::kAdd);
  CHECK(frames[6].store.delta == 1);
  CHECK(framer.native_mode());
  CHECK(framer.dialect() == Dialect::kModern);
}

TEST_CASE("a connection that starts native speaks the modern numbering without VALIDATE",
          "[framer]") {
  Framer framer{Limits{}};
  auto frames = split(framer, kHello + rendezvous::membership::encode_request(sample_join()) +
                                  byte(3) + str("key"));
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].kind == FrameKind::kHello);
  CHECK(frames[1].kind == FrameKind::kNative);
  REQUIRE(frames[2].kind == FrameKind::kStore);
  CHECK(frames[2].store.op == Op::kGet);  // 3 is GET in >= 2.2, ADD in 1.13
  CHECK(framer.dialect() == Dialect::kModern);
}

TEST_CASE("a 1.13 connection may also send native requests", "[framer]") {
  Framer framer{Limits{}};
  auto frames = split(
      framer, byte(0) + str("k") + str("v") + kHello +
                  rendezvous::membership::encode_request(rendezvous::membership::Leave{"bye"}) +
                  byte(2) + str("k"));
  REQUIRE(frames.size() == 4);
  CHECK(frames[0].store.op == Op::kSet);
  CHECK(frames[1].kind == FrameKind::kHello);
  CHECK(std::get<rendezvous::membership::Leave>(frames[2].native).reason == "bye");
  CHECK(frames[3].store.op == Op::kGet);  // 2 is GET in 1.13
  CHECK(framer.dialect() == Dialect::kLegacy113);
}

TEST_CASE("a mixed stream cut anywhere is incomplete and asks for more", "[framer]") {
  const std::string stream =
      kValidate + kHello + rendezvous::membership::encode_request(sample_join()) + byte(3) +
      str("key") +
      rendezvous::membership::encode_request(rendezvous::membership::WorkersStopped{7});
  for (std::size_t cut = 0; cut < stream.size(); ++cut) {
    Framer framer{Limits{}};
    auto frames = split(framer, stream.substr(0, cut));
    if (cut == 0) continue;
    REQUIRE_FALSE(frames.empty());
    INFO("cut at " << cut);
    CHECK(frames.back().kind != FrameKind::kError);
    if (frames.back().kind == FrameKind::kIncomplete) CHECK(frames.back().needed > 0);
  }
  Framer whole{Limits{}};
  CHECK(split(whole, stream).size() == 5);
}

TEST_CASE("bad input of either kind is an error naming it", "[framer]") {
  SECTION("an unknown query type after VALIDATE") {
    Framer framer{Limits{}};
    REQUIRE(framer.next(kValidate).kind == FrameKind::kStore);
    auto f = framer.next(byte(0x13));
    REQUIRE(f.kind == FrameKind::kError);
    CHECK_THAT(f.error, Catch::Contains("malformed request"));
  }
  SECTION("a native JOIN declaring a 1 GB run id") {
    Framer framer{Limits{}};
    REQUIRE(framer.next(kHello).kind == FrameKind::kHello);
    auto f = framer.next(test::framed(0x80, u64(std::uint64_t{1} << 30)));
    REQUIRE(f.kind == FrameKind::kError);
    CHECK_THAT(f.error, Catch::Contains("rendezvous request") &&
                            Catch::Contains("run_id of 1073741824 bytes exceeds"));
  }
  SECTION("a native message declaring more than the message limit") {
    Framer framer{Limits{}};
    REQUIRE(framer.next(kHello).kind == FrameKind::kHello);
    auto f = framer.next(byte(0x85) + u32(std::uint32_t{1} << 30));  // LEAVE of 1 GiB
    REQUIRE(f.kind == FrameKind::kError);
    CHECK_THAT(f.error, Catch::Contains("exceeds the limit"));
  }
  SECTION("a push type sent by a client") {
    Framer framer{Limits{}};
    auto f = framer.next(kValidate + byte(0x90));
    REQUIRE(f.kind == FrameKind::kStore);
    auto g = framer.next(test::framed(0x90, u64(1) + byte(0)));
    CHECK(g.kind == FrameKind::kError);
  }
  SECTION("a malformed HELLO") {
    Framer framer{Limits{}};
    auto f = framer.next(test::framed(0x8A, u32(2) + u32(2) + u64(5000)));  // a 5000-byte name
    REQUIRE(f.kind == FrameKind::kError);
    CHECK_THAT(f.error, Catch::Contains("ddprun version of 5000 bytes exceeds"));
    CHECK_FALSE(framer.agent().has_value());
  }
}

TEST_CASE("HELLO opens native requests: before it they are refused, a second one is an error",
          "[framer]") {
  SECTION("a protocol-1 agent's first JOIN or AUTH_HELLO, complete or not: kRefused") {
    const auto join = rendezvous::membership::encode_request(sample_join());
    // Protocol 1 had no length after the type byte: its JOIN began with the run id's length.
    const std::string v1_join = byte(0x80) + str("job") + str("host-a:1") + str("10.0.0.1");
    for (const std::string& bytes :
         {byte(0x80), join, v1_join, encode_auth_hello("job"), byte(0x88) + str("job"),
          rendezvous::membership::encode_request(rendezvous::membership::Heartbeat{})}) {
      Framer framer{Limits{}};
      REQUIRE(framer.next(kValidate).kind == FrameKind::kStore);  // a store query is fine
      auto f = framer.next(bytes);
      REQUIRE(f.kind == FrameKind::kRefused);
      CHECK_THAT(f.error, Catch::Contains("ddprun 0.1 (native protocol 1)") &&
                              Catch::Contains("upgrade ddprun on this node"));
      CHECK_FALSE(framer.agent().has_value());
    }
  }
  SECTION("HELLO: kHello with the agent's Version; incomplete until whole") {
    const rendezvous::membership::Version agent{7, 2, "9.9.9"};
    const std::string hello = rendezvous::membership::encode_hello(agent);
    CHECK(hello == test::hello(7, 2, "9.9.9"));  // the hand-written layout
    for (std::size_t cut = 1; cut < hello.size(); ++cut) {
      Framer framer{Limits{}};
      auto f = framer.next(hello.substr(0, cut));
      REQUIRE(f.kind == FrameKind::kIncomplete);
      CHECK(f.needed > cut);
      CHECK(f.needed <= hello.size());
    }
    Framer framer{Limits{}};
    auto f = framer.next(hello + "rest");
    REQUIRE(f.kind == FrameKind::kHello);
    CHECK(f.consumed == hello.size());
    CHECK(framer.agent() == agent);
    CHECK(framer.native_mode());
    // A second HELLO on the same connection is an error; other native requests go on.
    auto again = framer.next(kHello);
    REQUIRE(again.kind == FrameKind::kError);
    CHECK_THAT(again.error, Catch::Contains("second HELLO"));
    CHECK(framer.next(rendezvous::membership::encode_request(sample_join())).kind ==
          FrameKind::kNative);
    CHECK(framer.agent() == agent);
  }
  SECTION("AUTH_HELLO after HELLO is the job-secret handshake") {
    Framer framer{Limits{}};
    REQUIRE(framer.next(test::hello()).kind == FrameKind::kHello);
    auto f = framer.next(encode_auth_hello("job"));
    REQUIRE(f.kind == FrameKind::kAuthHello);
    CHECK(f.hello_run_id == "job");
  }
}

TEST_CASE("mutated mixed streams frame safely: progress or a clean stop", "[framer]") {
  rendezvous::membership::Failure failure;
  failure.node_key = "n";
  failure.message = "m";
  const std::string seed =
      kValidate + kHello + rendezvous::membership::encode_request(sample_join()) + byte(3) +
      str("key") +
      rendezvous::membership::encode_request(rendezvous::membership::ReportFailure{2, {failure}}) +
      byte(1) + str("k") + str("v");
  std::mt19937 rng(20261121);  // fixed: a failure reproduces
  for (int run = 0; run < 20000; ++run) {
    std::string stream = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % stream.size();
      switch (rng() % 3) {
        case 0:
          stream[at] = static_cast<char>(rng());
          break;
        case 1:
          stream.erase(at, 1 + rng() % 8);
          break;
        default:
          stream.insert(at, 1, static_cast<char>(rng()));
          break;
      }
      if (stream.empty()) stream = byte(0x81);
    }
    Framer framer{Limits{}};
    std::size_t used = 0;
    while (used < stream.size()) {
      const std::string_view rest = std::string_view(stream).substr(used);
      Frame f = framer.next(rest);
      if (f.kind == FrameKind::kError || f.kind == FrameKind::kRefused) {
        CHECK_FALSE(f.error.empty());
        break;
      }
      if (f.kind == FrameKind::kIncomplete) {
        REQUIRE(f.needed > rest.size());  // asks for more than it has: no spin
        break;
      }
      REQUIRE(f.consumed > 0);
      REQUIRE(f.consumed <= rest.size());
      used += f.consumed;
    }
  }
}

TEST_CASE("framed store replies carry type 0x95 and a length", "[framer]") {
  std::string out;
  put_store_reply(out, "");
  put_store_reply(out, std::string("a\0b", 3));
  CHECK(out == byte(0x95) + u64(0) + byte(0x95) + u64(3) + std::string("a\0b", 3));
}

}  // namespace
}  // namespace ddp::rendezvous
