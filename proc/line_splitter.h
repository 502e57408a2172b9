// Cuts a byte stream into whole lines for prefixing. Pure: no I/O.
// Bytes are passed through untouched (binary and invalid UTF-8 included); only '\n'
// separates lines. A partial line waits for more bytes; finish() emits it at EOF. A line
// longer than max_line is emitted in max_line pieces so memory stays bounded.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace ddp::proc {

class LineSplitter {
 public:
  using Emit = std::function<void(std::string_view line)>;  // without the '\n'

  explicit LineSplitter(std::size_t max_line = std::size_t{64} << 10) : max_line_(max_line) {}

  void feed(std::string_view bytes, const Emit& emit);
  // Emits the buffered partial line, if any.
  void finish(const Emit& emit);

 private:
  std::size_t max_line_;
  std::string partial_;
  bool cut_ = false;  // the last piece was cut at max_line; a '\n' next just ends it
};

}  // namespace ddp::proc
