// A minimal SDK worker driven by the integration tests:
//   sdk_probe allreduce   init from the environment, all-reduce (rank + 1) as float64,
//                         print {"rank", "world", "sum", "restart"} as JSON, then barrier
//   sdk_probe throw       throw std::runtime_error from a nested call (error-file test)
// An init failure prints the SDK's message and exits 2.
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ddp/collectives.h"
#include "ddp/error_file.h"

namespace {

// Kept out of line so the error file's stack shows it by name.
[[noreturn, gnu::noinline]] void fail_deep_inside(int rank) {
  throw std::runtime_error("probe failure on rank " + std::to_string(rank));
}

}  // namespace

int main(int argc, char** argv) {
  ddp::install_error_handler();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "throw") {
    const char* rank = std::getenv("RANK");
    fail_deep_inside(rank ? std::atoi(rank) : 0);
  }
  if (mode != "allreduce") {
    std::fprintf(stderr, "usage: sdk_probe allreduce|throw\n");
    return 2;
  }
  auto ctx = ddp::init();
  if (!ctx) {
    std::fprintf(stderr, "sdk_probe: %s\n", ctx.status().to_string().c_str());
    return 2;
  }
  const ddp::WorkerContext& c = **ctx;
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
