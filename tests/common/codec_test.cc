// common/codec.h: the writers' bytes, and Reader on both kinds of input: a stream (a short
// read is "incomplete" and says how many bytes it needs) and a record (fields missing at its
// end read as defaults, a field cut by its end is an error, bytes after the known fields are
// skipped); limits checked from declared lengths; the first failure sticks and reaches every
// enclosing reader.
#include "common/codec.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/catch.h"

namespace ddp::codec {
namespace {

// `u32 n | fields`, written by hand.
std::string record_of(std::string_view fields) {
  std::string out;
  put<std::uint32_t>(out, static_cast<std::uint32_t>(fields.size()));
  out.append(fields);
  return out;
}

TEST_CASE("put, put_str, put_record and message write raw little-endian bytes", "[codec]") {
  std::string out;
  put<std::uint8_t>(out, 0xAB);
  put<std::int32_t>(out, -2);
  put_str(out, "hi");
  CHECK(out == std::string("\xAB\xFE\xFF\xFF\xFF\x02\0\0\0\0\0\0\0hi", 15));
  std::string rec;
  put_record(rec, [&] { put<std::uint16_t>(rec, 0x0102); });
  CHECK(rec == std::string("\x02\0\0\0\x02\x01", 6));
  std::string empty;
  put_record(empty, [] {});
  CHECK(empty == std::string(4, '\0'));
  const std::string m = message(0x90, [](std::string& o) { put<std::uint8_t>(o, 7); });
  CHECK(m == std::string("\x90\x01\0\0\0\x07", 6));
}

TEST_CASE("a stream reader: a short read is incomplete and says what it needs", "[codec]") {
  const std::string bytes = std::string("\x05\0\0\0", 4) + "ab";
  SECTION("a fixed-size field") {
    Reader in(std::string_view(bytes).substr(0, 3));
    CHECK(in.get<std::uint32_t>() == 0);
    CHECK_FALSE(in.ok());
    CHECK(in.needed() == 4);
    CHECK(in.error().empty());
    const Decoded<int> d = in.finish(1);
    CHECK(d.state == DecodeState::kIncomplete);
    CHECK(d.needed == 4);
    CHECK(d.consumed == 0);
  }
  SECTION("a str's bytes: the whole str is needed, counted from the input's start") {
    std::string s;
    put_str(s, "hello");
    Reader in(std::string_view(s).substr(0, 10));
    CHECK(in.str("name", 100).empty());
    CHECK(in.needed() == s.size());
    CHECK(in.pos() == 8);  // the length was read; nothing after it
  }
  SECTION("the first shortfall sticks: later reads are no-ops returning defaults") {
    Reader in(bytes);
    CHECK(in.get<std::uint32_t>() == 5);
    CHECK(in.get<std::uint64_t>() == 0);  // only 2 bytes left
    CHECK(in.needed() == 12);
    CHECK(in.get<std::uint8_t>() == 0);  // 1 byte is there, but the reader stopped
    CHECK(in.pos() == 4);
    CHECK(in.needed() == 12);
  }
  SECTION("complete: the value and the bytes used") {
    const std::string input = bytes + "next";  // a Reader views its input: keep it alive
    Reader in(input);
    CHECK(in.get<std::uint32_t>() == 5);
    CHECK(in.bytes("pair", 2) == "ab");
    const Decoded<std::string> d = in.finish(std::string("v"));
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.value == "v");
    CHECK(d.consumed == 6);
    CHECK(in.remaining() == 4);
  }
}

TEST_CASE("limits fail from the declared length, before the bytes arrive", "[codec]") {
  SECTION("a str over its limit") {
    std::string s;
    put<std::uint64_t>(s, 5000);  // none of the 5000 bytes present
    Reader in(s);
    CHECK(in.str("key", 4096).empty());
    CHECK(in.error() == "key of 5000 bytes exceeds the limit of 4096 bytes");
    CHECK(in.needed() == 0);
    const Decoded<int> d = in.finish(0);
    CHECK(d.state == DecodeState::kError);
    CHECK(d.error == in.error());
  }
  SECTION("a count over its limit") {
    std::string s;
    put<std::uint64_t>(s, 17);
    Reader in(s);
    CHECK(in.count("keys", 16) == 0);
    CHECK(in.error() == "17 keys exceed the limit of 16");
  }
  SECTION("a count at its limit is fine") {
    std::string s;
    put<std::uint64_t>(s, 16);
    Reader in(s);
    CHECK(in.count("keys", 16) == 16);
    CHECK(in.ok());
  }
  SECTION("a length reaching past max_bytes from where it starts") {
    std::string s;
    put<std::uint32_t>(s, 1);
    put<std::uint64_t>(s, 5);  // 12 + 5 > 16
    Reader in(s, 16);
    in.get<std::uint32_t>();
    CHECK(in.str("value", 100).empty());
    CHECK(in.error() == "message of more than 16 bytes exceeds the limit");
    const std::string whole = s + "12345";
    Reader fits(whole, 17);
    fits.get<std::uint32_t>();
    CHECK(fits.str("value", 100) == "12345");
    CHECK(fits.ok());
  }
  SECTION("a flag that is not 0 or 1") {
    Reader in("\x02");
    CHECK_FALSE(in.flag("waiting"));  // only 1 is true, and the reader failed
    CHECK(in.error() == "waiting flag is 2; expected 0 or 1");
  }
  SECTION("after a failure nothing else is read or reported") {
    const std::string input("\x02\x01", 2);
    Reader in(input);
    in.flag("first");
    in.fail("second");
    CHECK(in.error() == "first flag is 2; expected 0 or 1");
    CHECK(in.get<std::uint8_t>() == 0);
    CHECK(in.pos() == 1);
  }
}

TEST_CASE("a record's missing last fields read as defaults, bytes after the known are skipped",
          "[codec]") {
  std::string fields;
  put<std::uint32_t>(fields, 7);
  put_str(fields, "name");
  SECTION("an older sender: a field starting at the record's end is its default") {
    const std::string input = record_of(fields) + "next";
    Reader in(input);
    Reader r = in.record("thing");
    CHECK(r.get<std::uint32_t>() == 7);
    CHECK(r.str("name", 100) == "name");
    CHECK(r.get<std::uint64_t>() == 0);  // not sent
    CHECK(r.str("note", 100).empty());   // not sent
    CHECK_FALSE(r.flag("newer"));        // not sent
    CHECK(r.ok());
    CHECK(in.ok());
    CHECK(in.pos() == 4 + fields.size());
    CHECK(in.remaining() == 4);
    // A record is never defaulted: a list entry or a flagged record that is not there is an
    // error, which reaches the enclosing readers.
    Reader nested = r.record("newer record");
    CHECK_FALSE(nested.ok());
    CHECK_FALSE(r.ok());
    CHECK_FALSE(in.ok());
    CHECK_THAT(in.error(), Catch::Contains("newer record is missing"));
  }
  SECTION("a newer sender: bytes after the fields this reader knows are skipped") {
    const std::string input = record_of(fields + "newer fields") + record_of(fields);
    Reader in(input);
    Reader first = in.record("first");
    CHECK(first.get<std::uint32_t>() == 7);
    CHECK(first.remaining() == fields.size() - 4 + 12);  // never read: skipped with the record
    Reader second = in.record("second");
    CHECK(second.get<std::uint32_t>() == 7);
    CHECK(second.str("name", 100) == "name");
    CHECK(in.ok());
    const Decoded<int> d = in.finish(2);
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.consumed == 2 * 4 + 2 * fields.size() + 12);
  }
  SECTION("an empty record: every field its default") {
    const std::string input = record_of("");
    Reader in(input);
    Reader r = in.record("thing");
    CHECK(r.get<std::int64_t>() == 0);
    CHECK(r.str("name", 100).empty());
    CHECK(r.ok());
    CHECK(in.finish(0).consumed == 4);
  }
}

TEST_CASE("a field cut by its record's end is an error, not incomplete", "[codec]") {
  std::string fields;
  put<std::uint32_t>(fields, 7);
  put_str(fields, "name");
  SECTION("a fixed-size field cut") {
    const std::string input = record_of(fields.substr(0, 2));
    Reader in(input);
    Reader r = in.record("thing");
    CHECK(r.get<std::uint32_t>() == 0);
    CHECK(r.error() == "a field runs past the end of its record");
    CHECK(in.finish(0).state == DecodeState::kError);
  }
  SECTION("a str's bytes cut") {
    const std::string input = record_of(fields.substr(0, fields.size() - 1));
    Reader in(input);
    Reader r = in.record("thing");
    r.get<std::uint32_t>();
    CHECK(r.str("name", 100).empty());
    CHECK(r.error() == "a field runs past the end of its record");
    CHECK(r.needed() == 0);
  }
  SECTION("a nested record longer than its parent") {
    const std::string inner = record_of("abcdef");
    const std::string input = record_of(inner.substr(0, 7));
    Reader in(input);
    Reader r = in.record("outer");
    Reader nested = r.record("inner");
    CHECK_FALSE(nested.ok());
    CHECK(r.error() == "a field runs past the end of its record");
    CHECK(in.error() == r.error());
  }
  SECTION("a record not all at hand in a stream: incomplete, the whole record needed") {
    const std::string whole = record_of(fields);
    Reader in(std::string_view(whole).substr(0, 6));
    Reader r = in.record("thing");
    CHECK_FALSE(r.ok());  // never to be read
    CHECK(in.needed() == whole.size());
    CHECK(in.error().empty());
    CHECK(in.finish(0).state == DecodeState::kIncomplete);
  }
  SECTION("a record longer than max_bytes: an error from its length alone") {
    std::string big;
    put<std::uint32_t>(big, 1000);
    Reader in(big, 64);
    Reader r = in.record("thing");
    CHECK_FALSE(r.ok());
    CHECK(in.error() == "thing of 1000 bytes exceeds the limit of 64 bytes");
  }
}

TEST_CASE("a record's failure is its parent's, up to the outermost reader", "[codec]") {
  std::string inner;
  put<std::uint8_t>(inner, 9);
  const std::string bytes = record_of(record_of(inner) + "x");
  Reader in(bytes);
  Reader outer = in.record("outer");
  Reader r = outer.record("inner");
  CHECK(r.get<std::uint8_t>() == 9);
  r.fail("value 9 is not 1..3");
  CHECK(outer.error() == "value 9 is not 1..3");
  CHECK(in.error() == "value 9 is not 1..3");
  CHECK(outer.get<std::uint8_t>() == 0);  // the parent stopped too: "x" is not read
  const Decoded<int> d = in.finish(1);
  CHECK(d.state == DecodeState::kError);
  CHECK(d.error == "value 9 is not 1..3");
  CHECK(d.consumed == 0);
}

TEST_CASE("an Envelope reads a native message's type and its fields as a record", "[codec]") {
  const std::string m = message(0x83, [](std::string& o) {
    put<std::uint64_t>(o, 42);
    put_str(o, "newer");  // a field this reader does not know
  });
  SECTION("whole, with the next message behind it") {
    const std::string input = m + "\x81";
    Envelope e(input, 1024);
    CHECK(e.type == 0x83);
    CHECK(e.in.get<std::uint64_t>() == 42);
    const Decoded<int> d = e.finish(1);
    REQUIRE(d.state == DecodeState::kComplete);
    CHECK(d.consumed == m.size());
  }
  SECTION("every prefix is incomplete and needs at most the message") {
    for (std::size_t n = 0; n < m.size(); ++n) {
      Envelope e(std::string_view(m).substr(0, n), 1024);
      CHECK_FALSE(e.in.ok());
      const Decoded<int> d = e.finish(1);
      REQUIRE(d.state == DecodeState::kIncomplete);
      CHECK(d.needed > n);
      CHECK(d.needed <= m.size());
    }
  }
  SECTION("larger than max_bytes: an error from the header alone") {
    Envelope e(std::string_view(m).substr(0, 5), 8);
    CHECK(e.finish(1).state == DecodeState::kError);
    CHECK_THAT(e.outer.error(), Catch::Contains("exceeds the limit of 8 bytes"));
  }
  SECTION("a field error inside is the message's") {
    Envelope e(m, 1024);
    e.in.fail("not an AUTH_HELLO");
    const Decoded<int> d = e.finish(1);
    CHECK(d.state == DecodeState::kError);
    CHECK(d.error == "not an AUTH_HELLO");
  }
}

}  // namespace
}  // namespace ddp::codec
