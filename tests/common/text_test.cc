// split, trim and parse_number: empty pieces, the characters trimmed, whole-string numbers.
#include "common/text.h"

#include <cstdint>
#include <string>

#include "tests/catch.h"

using namespace ddp;

using Pieces = std::vector<std::string_view>;

TEST_CASE("text: split keeps empty pieces", "[text]") {
  CHECK(split("a,b,c", ',') == Pieces{"a", "b", "c"});
  CHECK(split("a,,b,", ',') == Pieces{"a", "", "b", ""});
  CHECK(split(",a", ',') == Pieces{"", "a"});
  CHECK(split("", ',') == Pieces{""});
  CHECK(split("1:2", ':') == Pieces{"1", "2"});
}

TEST_CASE("text: trim whitespace or the characters given", "[text]") {
  CHECK(trim("  a b\t\r\n") == "a b");
  CHECK(trim("\v\fx\f") == "x");
  CHECK(trim(" \t ").empty());
  CHECK(trim("").empty());
  CHECK(trim(" \ta\t ", " ") == "\ta\t");
  CHECK(trim("//x//", "/") == "x");
}

TEST_CASE("text: parse_number takes the whole string or nothing", "[text]") {
  CHECK(parse_number<int>("42") == 42);
  CHECK(parse_number<int>("-7") == -7);
  CHECK(parse_number<std::int64_t>("9223372036854775807") == INT64_MAX);
  CHECK_FALSE(parse_number<int>(""));
  CHECK_FALSE(parse_number<int>("+1"));
  CHECK_FALSE(parse_number<int>(" 1"));
  CHECK_FALSE(parse_number<int>("1 "));
  CHECK_FALSE(parse_number<int>("3x"));
  CHECK_FALSE(parse_number<int>("3.0"));
  CHECK_FALSE(parse_number<int>("99999999999"));
  CHECK_FALSE(parse_number<unsigned>("-1"));
  CHECK(parse_number<double>("0.5") == 0.5);
  CHECK(parse_number<double>("30") == 30.0);
  CHECK_FALSE(parse_number<double>("1.5s"));
  CHECK_FALSE(parse_number<double>("+2"));
}
