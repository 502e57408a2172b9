#include "proc/line_splitter.h"

#include <string>
#include <vector>

#include "tests/catch.h"

namespace ddp::proc {
namespace {

struct Collector {
  std::vector<std::string> lines;
  LineSplitter::Emit emit() {
    return [this](std::string_view l) { lines.emplace_back(l); };
  }
};

TEST_CASE("splitter emits whole lines only and buffers the partial one", "[output]") {
  LineSplitter s;
  Collector c;
  s.feed("hel", c.emit());
  CHECK(c.lines.empty());
  s.feed("lo\nwor", c.emit());
  CHECK(c.lines == std::vector<std::string>{"hello"});
  s.feed("ld\n\nlast", c.emit());
  CHECK(c.lines == std::vector<std::string>{"hello", "world", ""});
  s.finish(c.emit());
  CHECK(c.lines == std::vector<std::string>{"hello", "world", "", "last"});
  s.finish(c.emit());
  CHECK(c.lines.size() == 4);
}

TEST_CASE("splitter passes binary bytes through", "[output]") {
  LineSplitter s;
  Collector c;
  std::string bin("a\0b\xff\xfe\r", 6);
  s.feed(bin + "\n" + std::string("\x80", 1), c.emit());
  s.finish(c.emit());
  REQUIRE(c.lines.size() == 2);
  CHECK(c.lines[0] == bin);
  CHECK(c.lines[1] == std::string("\x80", 1));
}

TEST_CASE("splitter cuts lines longer than its bound", "[output]") {
  LineSplitter s(4);
  Collector c;
  s.feed("abcdefghij\nxy", c.emit());
  CHECK(c.lines == std::vector<std::string>{"abcd", "efgh", "ij"});
  s.feed("zw", c.emit());  // exactly the bound: cut, then its '\n' only ends it
  CHECK(c.lines.back() == "xyzw");
  s.feed("\nq\n", c.emit());
  CHECK(c.lines == std::vector<std::string>{"abcd", "efgh", "ij", "xyzw", "q"});
}

TEST_CASE("splitter handles a line split byte by byte", "[output]") {
  LineSplitter s;
  Collector c;
  for (char ch : std::string("one\ntwo\n")) s.feed(std::string_view(&ch, 1), c.emit());
  CHECK(c.lines == std::vector<std::string>{"one", "two"});
}

}  // namespace
}  // namespace ddp::proc
