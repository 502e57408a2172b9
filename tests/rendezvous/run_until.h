// Test helper: drive an io_context until a condition holds, with a deadline.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>

namespace ddp::rendezvous::test {

// Runs `io` until `done()` holds or `limit` passes; true when it holds.
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    io.run_one_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace ddp::rendezvous::test
