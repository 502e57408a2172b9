#include "launcher/fanout/output_relay.h"

#include <unistd.h>

#include <cerrno>

namespace ddp::launcher::fanout {
namespace {

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed console: nothing more to do
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

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
  write_all(fd_[stream == proc::StreamId::kStdout ? 0 : 1], scratch_);
}

}  // namespace ddp::launcher::fanout
