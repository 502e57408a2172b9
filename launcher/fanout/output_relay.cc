#include "launcher/fanout/output_relay.h"

#include "proc/write_all.h"

namespace ddp::launcher::fanout {

void OutputRelay::write(int id, proc::StreamId stream, std::string_view bytes) {
  splitters_[{id, static_cast<int>(stream)}].feed(
      bytes, [&](std::string_view text) { line(id, stream, text); });
}

void OutputRelay::end(int id, proc::StreamId stream) {
  auto it = splitters_.find({id, static_cast<int>(stream)});
  if (it == splitters_.end()) return;
  it->second.finish([&](std::string_view text) { line(id, stream, text); });
}

void OutputRelay::line(int id, proc::StreamId stream, std::string_view text) {
  scratch_ = labels_[id];
  scratch_.append(text);
  scratch_ += '\n';
  // A closed console: nothing more to do.
  (void)proc::write_all(fd_[stream == proc::StreamId::kStdout ? 0 : 1], scratch_);
}

}  // namespace ddp::launcher::fanout
