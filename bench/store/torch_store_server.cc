// PyTorch's own TCPStore server (c10d::TCPStore, isServer=true) as a process, the baseline of
// the store benchmark: LibTorch 1.13 (the host's build) or 2.x (bench/store/build_torch2.sh
// builds it in a Debian root against 2.6 or 2.14, whose builds have no libuv: its server is
// then c10d's non-libuv TCPStoreBackend, the only one those builds have).
//
// Usage: torch_store_server HOST
// Binds port 0, prints "listening on HOST:PORT" on stdout, serves until SIGTERM or SIGINT,
// exits 0.
#include <torch/version.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s HOST\n", argv[0]);
    return 2;
  }
  // Block the stop signals before c10d starts its threads so only sigwait below receives them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  c10d::TCPStoreOptions opts;
  opts.port = 0;
  opts.isServer = true;
  opts.waitWorkers = false;
#if TORCH_VERSION_MAJOR >= 2
  opts.useLibUV = false;  // 2.x defaults to libuv, which Debian's builds refuse
#endif
  auto store = std::make_unique<c10d::TCPStore>(argv[1], opts);
  std::printf("listening on %s:%u\n", argv[1], static_cast<unsigned>(store->getPort()));
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop, &sig);
  store.reset();
  return 0;
}
