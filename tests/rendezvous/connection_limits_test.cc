// The pure pieces of the connection limits: admission counts, --store-allow networks, the
// rate-limited refusal log (time passed in), the caps derived from the open-file limit and flag
// validation.
#include "rendezvous/connection_limits.h"

#include <chrono>

#include "rendezvous/admission.h"
#include "rendezvous/refusal_log.h"
#include "rendezvous/store_allow.h"
#include "tests/catch.h"

namespace ip = boost::asio::ip;
using namespace ddp::rendezvous;
using namespace std::chrono_literals;

TEST_CASE("admission caps connections per peer and in total") {
  Admission admission(3, 2);
  const auto a = ip::make_address("10.0.0.1");
  const auto b = ip::make_address("10.0.0.2");
  Admission::Ticket t1, t2, t3, t4, t5;
  CHECK(admission.admit(a, t1) == AdmitResult::kAdmitted);
  CHECK(admission.admit(a, t2) == AdmitResult::kAdmitted);
  CHECK(admission.admit(a, t3) == AdmitResult::kPeerFull);
  CHECK_FALSE(t3.held());
  CHECK(admission.admit(b, t3) == AdmitResult::kAdmitted);
  CHECK(admission.admit(b, t4) == AdmitResult::kTotalFull);
  CHECK(admission.total() == 3);
  CHECK(admission.count(a) == 2);
  t1.reset();
  CHECK(admission.total() == 2);
  CHECK(admission.count(a) == 1);
  CHECK(admission.admit(a, t5) == AdmitResult::kAdmitted);
}

TEST_CASE("admission gives the slot back when the ticket goes, moved or not") {
  Admission admission(0, 1);  // no total cap
  const auto a = ip::make_address("::1");
  {
    Admission::Ticket outer;
    {
      Admission::Ticket inner;
      REQUIRE(admission.admit(a, inner) == AdmitResult::kAdmitted);
      outer = std::move(inner);
    }
    CHECK(admission.count(a) == 1);
    Admission::Ticket again;
    CHECK(admission.admit(a, again) == AdmitResult::kPeerFull);
  }
  CHECK(admission.total() == 0);
  CHECK(admission.peers() == 0);
}

TEST_CASE("admission counts an IPv4-mapped IPv6 peer as its IPv4 address") {
  Admission admission(10, 1);
  Admission::Ticket t1, t2;
  REQUIRE(admission.admit(ip::make_address("::ffff:127.0.0.2"), t1) == AdmitResult::kAdmitted);
  CHECK(admission.admit(ip::make_address("127.0.0.2"), t2) == AdmitResult::kPeerFull);
  CHECK(admission.count(ip::make_address("127.0.0.2")) == 1);
}

TEST_CASE("store-allow networks parse and match IPv4 and IPv6") {
  auto allow = parse_store_allow("10.1.0.0/16,192.168.4.0/22,fd00:ab::/32,127.0.0.2,0.0.0.0/0");
  REQUIRE(allow);
  CHECK(allow->to_string() == "10.1.0.0/16,192.168.4.0/22,127.0.0.2/32,0.0.0.0/0,fd00:ab::/32");

  auto v4 = parse_store_allow("10.1.0.0/16");
  REQUIRE(v4);
  CHECK(v4->contains(ip::make_address("10.1.255.3")));
  CHECK(v4->contains(ip::make_address("10.1.0.0")));
  CHECK_FALSE(v4->contains(ip::make_address("10.2.0.1")));
  CHECK(v4->contains(ip::make_address("::ffff:10.1.0.9")));  // dual-stack listener's view
  CHECK_FALSE(v4->contains(ip::make_address("fd00::1")));

  auto odd = parse_store_allow("192.168.4.0/22");
  REQUIRE(odd);
  CHECK(odd->contains(ip::make_address("192.168.7.255")));
  CHECK_FALSE(odd->contains(ip::make_address("192.168.8.0")));
  CHECK_FALSE(odd->contains(ip::make_address("192.168.3.255")));

  auto v6 = parse_store_allow("fd00:ab::/32");
  REQUIRE(v6);
  CHECK(v6->contains(ip::make_address("fd00:ab:1::5")));
  CHECK_FALSE(v6->contains(ip::make_address("fd00:ac::5")));
  CHECK_FALSE(v6->contains(ip::make_address("10.0.0.1")));

  auto host = parse_store_allow("127.0.0.2");  // a bare address: one host
  REQUIRE(host);
  CHECK(host->to_string() == "127.0.0.2/32");
  CHECK(host->contains(ip::make_address("127.0.0.2")));
  CHECK_FALSE(host->contains(ip::make_address("127.0.0.1")));
  auto mapped_host = parse_store_allow("::ffff:10.0.0.7");  // written as IPv4-mapped
  REQUIRE(mapped_host);
  CHECK(mapped_host->contains(ip::make_address("10.0.0.7")));

  auto all = parse_store_allow("0.0.0.0/0");
  REQUIRE(all);
  CHECK(all->contains(ip::make_address("203.0.113.9")));
  CHECK_FALSE(all->contains(ip::make_address("::1")));
}

TEST_CASE("store-allow lists take loopback and refuse bad entries with one line") {
  auto list = parse_store_allow("loopback,10.0.0.0/8");
  REQUIRE(list);
  CHECK(list->to_string() == "127.0.0.0/8,10.0.0.0/8,::1/128");
  CHECK(list->contains(ip::make_address("127.0.0.1")));
  CHECK(list->contains(ip::make_address("127.0.0.2")));
  CHECK(list->contains(ip::make_address("::1")));
  CHECK(list->contains(ip::make_address("10.9.9.9")));
  CHECK_FALSE(list->contains(ip::make_address("192.168.0.1")));
  CHECK_FALSE(list->contains(ip::make_address("::2")));

  const char* bad[] = {"",
                       "10.0.0.0/33",
                       "fd00::/129",
                       "10.0.0.0/",
                       "10.0.0.0/x",
                       "nope",
                       "10.0.0.0/8,,",
                       "10.1.2.3/8",
                       "10.0.0.0/8 ",
                       "10.0.0.0/-1",
                       "10.0.0.0/99999999999999999999",
                       "10.1/16",
                       "::ffff:10.0.0.0/104"};
  for (const char* text : bad) {
    auto r = parse_store_allow(text);
    INFO(text);
    REQUIRE_FALSE(r);
    CHECK(r.status().code() == ddp::ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find("--store-allow") == 0);
    CHECK(r.status().message().find('\n') == std::string::npos);
  }
  CHECK(parse_store_allow("10.0.0.0/33").status().message().find("0..32 for IPv4") !=
        std::string::npos);
  CHECK(parse_store_allow("10.1.2.3/8").status().message().find("bits set") != std::string::npos);
}

TEST_CASE("the refusal log writes one line per reason per interval with the count") {
  RefusalLog log(60s);
  const RefusalLog::TimePoint t0{};
  CHECK(log.record(Refusal::kPeerFull, t0) == 1u);
  CHECK_FALSE(log.record(Refusal::kPeerFull, t0 + 1s));
  CHECK_FALSE(log.record(Refusal::kPeerFull, t0 + 59s));
  CHECK(log.record(Refusal::kTotalFull, t0 + 2s) == 1u);  // another reason: its own first line
  CHECK(log.record(Refusal::kPeerFull, t0 + 60s) == 3u);  // this one and the two suppressed
  CHECK_FALSE(log.record(Refusal::kPeerFull, t0 + 61s));
  CHECK(log.record(Refusal::kPeerFull, t0 + 200s) == 2u);
}

TEST_CASE("the refusal log writes one line per interval under a flood") {
  // Memory and lines do not grow with the flood: one entry per reason, whatever the peers.
  RefusalLog log(60s);
  const RefusalLog::TimePoint t0{};
  int lines = 0;
  for (int i = 0; i < 100000; ++i) {
    if (log.record(Refusal::kDescriptors, t0 + std::chrono::milliseconds(i))) ++lines;
  }
  CHECK(lines == 2);  // at 0 s and 60 s of the 100 s
}

TEST_CASE("connection caps derive from the open-file limit") {
  auto caps = resolve_caps({}, 256);
  REQUIRE(caps);
  CHECK(caps->max_connections == 256 - 64);
  CHECK(caps->max_per_peer == (256 - 64) / 2);
  auto big = resolve_caps({}, 1 << 20);
  REQUIRE(big);
  CHECK(big->max_connections == (1 << 20) - (1 << 17));
  CHECK(big->max_per_peer == big->max_connections - 1024);

  ConnectionLimits given;
  given.max_connections = 100;
  given.max_per_peer = 10;
  auto explicit_caps = resolve_caps(given, 1024);
  REQUIRE(explicit_caps);
  CHECK(explicit_caps->max_connections == 100);
  CHECK(explicit_caps->max_per_peer == 10);

  given.max_connections = 1000;
  auto too_many = resolve_caps(given, 256);
  REQUIRE_FALSE(too_many);
  CHECK(too_many.status().message().find("--max-connections 1000 exceeds") == 0);

  CHECK(too_many.status().message().find("ulimit -n") != std::string::npos);

  auto tiny = resolve_caps({}, 64);  // no room beyond the reserve: half of the limit
  REQUIRE(tiny);
  CHECK(tiny->max_connections == 32);
  CHECK(tiny->max_per_peer == 16);
}

TEST_CASE("connection flags validate into limits with one-line errors") {
  ConnectionFlags flags;
  auto defaults = connection_limits_from_flags(flags);
  REQUIRE(defaults);
  CHECK(defaults->first_request_timeout == 10s);
  CHECK(defaults->store_allow.empty());

  flags.first_request_timeout_s = 0.25;
  flags.store_allow = "loopback";
  auto set = connection_limits_from_flags(flags);
  REQUIRE(set);
  CHECK(set->first_request_timeout == 250ms);
  CHECK(set->store_allow.to_string() == "127.0.0.0/8,::1/128");

  flags.first_request_timeout_s = -1;
  auto negative = connection_limits_from_flags(flags);
  REQUIRE_FALSE(negative);
  CHECK(negative.status().message().find("--first-request-timeout") == 0);

  flags.first_request_timeout_s = 10;
  flags.max_connections = 10;
  flags.max_per_peer = 11;
  auto per_peer = connection_limits_from_flags(flags);
  REQUIRE_FALSE(per_peer);
  CHECK(per_peer.status().message().find("--max-connections-per-peer 11 exceeds") == 0);

  flags.max_per_peer = 5;
  flags.store_allow = "10.0.0.0/40";
  auto cidr = connection_limits_from_flags(flags);
  REQUIRE_FALSE(cidr);
  CHECK(cidr.status().message().find("--store-allow") == 0);
}
