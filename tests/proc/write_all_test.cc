// write_all: a buffer larger than a pipe holds arrives whole, and a failed write is kIo.
#include "proc/write_all.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/catch.h"

namespace ddp::proc {
namespace {

TEST_CASE("write_all writes past the pipe's capacity in several writes", "[write_all]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const std::string sent(1 << 20, 'x');  // 16 times a default pipe's 64 KiB
  std::string received;
  std::thread reader([&] {
    char chunk[4096];
    for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;)
      received.append(chunk, static_cast<std::size_t>(n));
  });
  const Status s = write_all(fds[1], sent);
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  CHECK(s.is_ok());
  CHECK(received == sent);
}

TEST_CASE("write_all fails with the OS's reason", "[write_all]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const Status s = write_all(fds[0], "x");  // the read end
  ::close(fds[0]);
  ::close(fds[1]);
  CHECK(s.code() == ErrorCode::kIo);
  CHECK(s.message() == "Bad file descriptor");
  CHECK(write_all(fds[1], "").is_ok());  // nothing to write: no write at all
}

}  // namespace
}  // namespace ddp::proc
