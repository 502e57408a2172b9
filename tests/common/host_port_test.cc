// HOST[:PORT]: names, IPv4, [IPv6]:PORT, bare IPv6 where allowed, port ranges.
#include "common/host_port.h"

#include "tests/catch.h"

using namespace ddp;

TEST_CASE("host_port: names and IPv4 with and without a port", "[host_port]") {
  auto name = parse_host_port("node1");
  REQUIRE(name);
  CHECK(name->host == "node1");
  CHECK_FALSE(name->port);
  auto v4 = parse_host_port("10.0.0.1:29400");
  REQUIRE(v4);
  CHECK(v4->host == "10.0.0.1");
  CHECK(v4->port == 29400);
}

TEST_CASE("host_port: IPv6 in brackets, bare only where allowed", "[host_port]") {
  auto v6 = parse_host_port("[fd00::2]:5000");
  REQUIRE(v6);
  CHECK(v6->host == "fd00::2");
  CHECK(v6->port == 5000);
  auto no_port = parse_host_port("[::1]");
  REQUIRE(no_port);
  CHECK(no_port->host == "::1");
  CHECK_FALSE(no_port->port);
  CHECK(parse_host_port("fd00::2").status().code() == ErrorCode::kInvalidArgument);
  auto bare = parse_host_port("fd00::2", BareIpv6::kHost);
  REQUIRE(bare);
  CHECK(bare->host == "fd00::2");
  CHECK_FALSE(bare->port);
}

TEST_CASE("host_port: malformed text is refused", "[host_port]") {
  for (const char* bad : {"", ":1", "[]:1", "[::1", "[::1]x", "[::1]:", "h:", "h:x", "h:-1",
                          "h:65536", "h:0", "h: 1"}) {
    INFO(bad);
    CHECK(parse_host_port(bad).status().code() == ErrorCode::kInvalidArgument);
  }
  auto zero = parse_host_port("h:0", BareIpv6::kRefused, 0);
  REQUIRE(zero);
  CHECK(zero->port == 0);
  auto split = split_host_port("h:");
  REQUIRE(split);
  CHECK(split->port == std::string_view());
}

TEST_CASE("host_port: joined back with brackets for IPv6", "[host_port]") {
  CHECK(join_host_port("h", 1) == "h:1");
  CHECK(join_host_port("::1", 29400) == "[::1]:29400");
  CHECK(join_host_port("10.0.0.1", 80) == "10.0.0.1:80");
}
