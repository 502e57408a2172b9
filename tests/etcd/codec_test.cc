// The pure parts of the etcd client: base64, gateway integers, prefixes, endpoint lists.
#include "etcd/codec.h"

#include "etcd/endpoints.h"
#include "tests/catch.h"

namespace ddp::etcd {

TEST_CASE("base64 round-trips every length and byte", "[codec]") {
  std::string bytes;
  for (int n = 0; n < 300; ++n) {
    auto encoded = base64_encode(bytes);
    CHECK(encoded.size() % 4 == 0);
    auto decoded = base64_decode(encoded);
    REQUIRE(decoded);
    CHECK(*decoded == bytes);
    bytes += static_cast<char>(n * 7);
  }
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foo2") == "Zm9vMg==");
  CHECK(!base64_decode("Zm9"));
  CHECK(!base64_decode("Zm9*"));
  CHECK(!base64_decode("Z=9v"));
}

TEST_CASE("gateway integers are strings, numbers or absent", "[codec]") {
  Json j = Json::parse(R"({"a":"123","b":45,"c":"x","d":"-9223372036854775808"})");
  CHECK(*int_field(j, "a") == 123);
  CHECK(*int_field(j, "b") == 45);
  CHECK(*int_field(j, "missing") == 0);
  CHECK(int_field(j, "c").status().code() == ErrorCode::kProtocol);
  CHECK(*int_field(j, "d") == INT64_MIN);
  auto kv = decode_key_value(Json::parse(R"({"key":"Zm9v","create_revision":"3"})"));
  REQUIRE(kv);
  CHECK(kv->key == "foo");
  CHECK(kv->value.empty());  // omitted: the default
  CHECK(kv->create_revision == 3);
  CHECK(kv->mod_revision == 0);
}

TEST_CASE("endpoint lists", "[codec]") {
  auto one = parse_endpoints("etcd1");
  REQUIRE(one);
  CHECK(*one == std::vector<Endpoint>{{"etcd1", 2379}});
  auto many = parse_endpoints("http://a:1,b:2, [::1]:3,https://c/");
  REQUIRE(many);
  CHECK(*many == std::vector<Endpoint>{{"a", 1}, {"b", 2}, {"::1", 3}, {"c", 2379}});
  CHECK(join_endpoints(*many) == "a:1, b:2, [::1]:3, c:2379");
  for (const char* bad : {"", "a,,b", "a:0", "a:x", "unix://s", ":5", "a:"}) {
    INFO(bad);
    CHECK(parse_endpoints(bad).status().code() == ErrorCode::kInvalidArgument);
  }
}

}  // namespace ddp::etcd
