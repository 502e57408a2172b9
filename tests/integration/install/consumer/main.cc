// A worker of a ddprun job using only the installed SDK: joins the process group from
// ddprun's environment and sums rank + 1 over the job.
#include <cstdio>

#include "ddp/collectives.h"
#include "ddp/process_group.h"

int main() {
  auto ctx = ddp::init();
  if (!ctx) {
    std::fprintf(stderr, "init failed: %s\n", ctx.status().message().c_str());
    return 1;
  }
  const ddp::WorkerContext& c = **ctx;
  double sum = ddp::all_reduce_metric(c, c.rank() + 1.0, ddp::ReduceOp::kSum);
  std::printf("installed sdk rank %d of %d sum %g\n", c.rank(), c.world_size(), sum);
  return 0;
}
