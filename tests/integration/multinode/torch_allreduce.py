# Unmodified PyTorch worker: env:// init through the agent's worker store, one Gloo all_reduce.
# With WAIT_BELOW=N in the environment, a worker of a world smaller than N then waits to be
# stopped (the agent's SIGTERM ends it), so a scale-up restart can be observed.
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
print("allreduce rank %d of %d sum %s" % (dist.get_rank(), dist.get_world_size(), t.item()),
      flush=True)
if dist.get_world_size() < int(os.environ.get("WAIT_BELOW", "0")):
    open(os.path.join(os.environ["MARK_DIR"], "small.%d" % dist.get_rank()), "w").close()
    time.sleep(60)  # the point: stay in the round until the agent stops it
dist.barrier()
dist.destroy_process_group()
