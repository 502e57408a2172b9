// The wait on a Boost.Process v2 handle, for proc's own sources only (the rest of the project
// never sees Boost.Process). Newer Boost (sid's 1.92) writes the exit into a reference and
// completes with the error alone; earlier ones (1.81, 1.83) complete with both. This calls
// whichever the installed Boost has and gives `done(error_code, native_exit_code_type)` both
// (the raw waitpid status either way). `status` must outlive the wait. The io_context's thread,
// like the handle.
#pragma once

#include <boost/process/v2/process_handle.hpp>
#include <boost/system/error_code.hpp>
#include <utility>

namespace ddp::proc {

namespace detail {
struct ErrorOnly {
  void operator()(boost::system::error_code) const {}
};
}  // namespace detail

template <typename Handle, typename Done>
void async_wait_exit(Handle& handle, boost::process::v2::native_exit_code_type& status, Done done) {
  if constexpr (requires { handle.async_wait(status, detail::ErrorOnly{}); }) {
    // This wait reads `status` first and calls waitpid only while it says "running".
    status = boost::process::v2::detail::still_active;
    handle.async_wait(status, [done = std::move(done), &status](
                                  boost::system::error_code ec) mutable { done(ec, status); });
  } else {
    handle.async_wait(std::move(done));
  }
}

}  // namespace ddp::proc
