#include "proc/line_splitter.h"

#include <algorithm>

namespace ddp::proc {

void LineSplitter::feed(std::string_view bytes, const Emit& emit) {
  if (cut_ && !bytes.empty() && bytes.front() == '\n') bytes.remove_prefix(1);  // ended a piece
  cut_ = false;
  while (!bytes.empty()) {
    std::size_t nl = bytes.find('\n');
    std::size_t room = max_line_ - std::min(max_line_, partial_.size());
    if (nl != std::string_view::npos && nl <= room) {
      if (partial_.empty()) {
        emit(bytes.substr(0, nl));  // the common case: no copy
      } else {
        partial_.append(bytes.substr(0, nl));
        emit(partial_);
        partial_.clear();
      }
      bytes.remove_prefix(nl + 1);
      continue;
    }
    // No newline within reach: buffer up to max_line, emitting full pieces.
    std::size_t take = std::min(bytes.size(), room);
    partial_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (partial_.size() >= max_line_) {
      emit(partial_);
      partial_.clear();
      if (!bytes.empty() && bytes.front() == '\n') {
        bytes.remove_prefix(1);
      } else if (bytes.empty()) {
        cut_ = true;
      }
    }
  }
}

void LineSplitter::finish(const Emit& emit) {
  if (partial_.empty()) return;
  emit(partial_);
  partial_.clear();
}

}  // namespace ddp::proc
