// Reading what a non-blocking pipe holds right now, for the process launchers (the agent's
// workers, the fan-out's ssh/pbsdsh children): at most `rounds` reads of 64 KiB per call, so
// one chatty process cannot starve the others on a single-threaded io_context.
#pragma once

#include <functional>
#include <string_view>

namespace ddp::proc {

enum class PipeState {
  kOpen,    // drained to EAGAIN, or stopped at the bound: wait for readability again
  kClosed,  // EOF or a read error (the caller ends the stream), or `sink` asked to stop
};

// Calls `sink` with each chunk read, in order; `sink` returns false to stop reading (the
// process was released), which returns kClosed.
PipeState drain_pipe(int fd, const std::function<bool(std::string_view)>& sink, int rounds = 16);

}  // namespace ddp::proc
