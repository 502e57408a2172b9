// The fan-out console: "[host] " before every line, per stream, partial lines at EOF.
#include "launcher/fanout/output_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "tests/catch.h"

using ddp::proc::StreamId;

namespace {

std::string drain(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("output relay: host prefix on whole lines, streams apart, partial line at EOF",
          "[fanout]") {
  int out[2], err[2];
  REQUIRE(::pipe2(out, O_NONBLOCK) == 0);
  REQUIRE(::pipe2(err, O_NONBLOCK) == 0);
  {
    ddp::launcher::fanout::OutputRelay relay(out[1], err[1]);
    relay.set_label(0, "n1");
    relay.set_label(1, "n2");
    relay.write(0, StreamId::kStdout, "[default0]:a\n[default1]:b");
    relay.write(1, StreamId::kStdout, "[default0]:c\n");
    relay.write(0, StreamId::kStdout, "c\n");
    relay.write(1, StreamId::kStderr, "log line\nlast");
    relay.end(1, StreamId::kStderr);
    relay.end(0, StreamId::kStdout);  // nothing pending
  }
  CHECK(drain(out[0]) == "[n1] [default0]:a\n[n2] [default0]:c\n[n1] [default1]:bc\n");
  CHECK(drain(err[0]) == "[n2] log line\n[n2] last\n");
  for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
}
