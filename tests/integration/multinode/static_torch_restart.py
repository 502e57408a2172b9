# Unmodified PyTorch worker for test_static.py: in the first attempt global rank 2 exits 3
# before joining (the others block in init_process_group until the agent stops them); in
# the next attempt every rank joins through the same static store under the new
# /worker/attempt_<n> prefix and all-reduces once.
import os
import sys

import torch
import torch.distributed as dist

if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" and os.environ["RANK"] == "2":
    sys.exit(3)
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
print("allreduce attempt %s rank %d of %d sum %s" % (
    os.environ["TORCHELASTIC_RESTART_COUNT"], dist.get_rank(), dist.get_world_size(), t.item()),
    flush=True)
dist.barrier()
dist.destroy_process_group()
