// A minimal SDK worker driven by the integration tests:
//   sdk_probe allreduce   init from the environment, all-reduce (rank + 1) as float64,
//                         print {"rank", "world", "sum", "restart"} as JSON, then barrier
//   sdk_probe throw       throw std::runtime_error from a nested call (error-file test)
//   sdk_probe spawn N WHAT [RANK VALUE]
//                         ddp::spawn N workers of this program, each doing WHAT:
//                         allreduce  as above;
//                         hang       init, barrier, print {"rank", "pid"}, wait for a signal;
//                         fail       as hang, but rank RANK exits with code VALUE;
//                         signal     as hang, but rank RANK raises signal VALUE.
//   sdk_probe spawn-node NODES NR PORT N
//                         one node's driver of a NODES-node job (node 0 hosts the store on
//                         127.0.0.1:PORT): N workers doing allreduce.
// An init failure prints the SDK's message and exits 2.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ddp/collectives.h"
#include "ddp/error_file.h"
#include "ddp/spawn.h"

namespace {

// Kept out of line so the error file's stack shows it by name.
[[noreturn, gnu::noinline]] void fail_deep_inside(int rank) {
  throw std::runtime_error("probe failure on rank " + std::to_string(rank));
}

std::unique_ptr<ddp::WorkerContext> init_or_exit() {
  auto ctx = ddp::init();
  if (!ctx) {
    std::fprintf(stderr, "sdk_probe: %s\n", ctx.status().to_string().c_str());
    std::exit(2);
  }
  return std::move(*ctx);
}

int allreduce() {
  auto ctx = init_or_exit();
  const ddp::WorkerContext& c = *ctx;
  double sum = ddp::all_reduce_metric(c, c.rank() + 1.0, ddp::ReduceOp::kSum);
  nlohmann::json out = {{"rank", c.rank()},
                        {"world", c.world_size()},
                        {"sum", sum},
                        {"restart", c.env().restart_count}};
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  ddp::barrier(c);
  return 0;
}

// Every worker is up (barrier) before any of them fails; the others then wait to be stopped.
int ready_then(const std::string& what, int victim, int value) {
  auto ctx = init_or_exit();
  ddp::barrier(*ctx);
  std::printf("%s\n", nlohmann::json({{"rank", ctx->rank()}, {"pid", ::getpid()}}).dump().c_str());
  std::fflush(stdout);
  if (ctx->rank() == victim && what == "fail") std::_Exit(value);
  if (ctx->rank() == victim && what == "signal") ::raise(value);
  for (;;) ::pause();  // the point: stay alive until the parent stops this worker
}

}  // namespace

int main(int argc, char** argv) {
  ddp::install_error_handler();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "throw") {
    const char* rank = std::getenv("RANK");
    fail_deep_inside(rank ? std::atoi(rank) : 0);
  }
  if (mode == "allreduce") return allreduce();
  if (mode == "spawn" && argc >= 4) {
    const std::string what = argv[3];
    const int victim = argc > 4 ? std::atoi(argv[4]) : -1;
    const int value = argc > 5 ? std::atoi(argv[5]) : 0;
    return ddp::spawn({.nprocs = std::atoi(argv[2])}, [&] {
      return what == "allreduce" ? allreduce() : ready_then(what, victim, value);
    });
  }
  if (mode == "spawn-node" && argc == 6) {
    return ddp::spawn({.nprocs = std::atoi(argv[5]),
                       .nodes = std::atoi(argv[2]),
                       .node_rank = std::atoi(argv[3]),
                       .master_port = std::atoi(argv[4])},
                      allreduce);
  }
  std::fprintf(stderr,
               "usage: sdk_probe allreduce|throw|spawn N allreduce|hang|fail|signal|"
               "spawn-node NODES NR PORT N\n");
  return 2;
}
