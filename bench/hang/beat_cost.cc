// The worker SDK's cost per heartbeat (ddp::Heartbeat): a FIFO drained by a reader thread, as
// the agent drains it, and 1,000,000 beats timed on the calling thread. Prints ns per beat.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "ddp/heartbeat.h"

int main() {
  char dir[] = "/tmp/ddp_beat_cost_XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  const std::string fifo = std::string(dir) + "/beat";
  if (::mkfifo(fifo.c_str(), 0600) != 0) return 1;
  const int reader = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  std::atomic<bool> done{false};
  std::thread drain([&] {
    char buffer[65536];
    while (!done) {
      if (::read(reader, buffer, sizeof buffer) <= 0) break;
    }
  });
  ::setenv("DDPRUN_HEARTBEAT_FILE", fifo.c_str(), 1);
  auto& heartbeat = ddp::Heartbeat::process();
  constexpr int kBeats = 1'000'000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBeats; ++i) heartbeat.begin_step();
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kBeats;
  done = true;
  ::write(::open(fifo.c_str(), O_WRONLY), "x", 1);  // wakes the reader
  drain.join();
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  std::printf("worker SDK heartbeat: %.0f ns per beat (%d beats, one write(2) each)\n", ns, kBeats);
  return heartbeat.enabled() ? 0 : 1;
}
