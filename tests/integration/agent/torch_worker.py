"""An unmodified PyTorch program: env:// init, Gloo all-reduce, torch's @record.

usage: torch_worker.py OUTFILE_PREFIX [fail]
Writes OUTFILE_PREFIX<rank> with the all-reduced sum; with `fail`, rank 1 raises after the
all-reduce so @record writes TORCHELASTIC_ERROR_FILE.
"""
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    dist.init_process_group("gloo")  # env:// from RANK, WORLD_SIZE, MASTER_ADDR/PORT
    rank = dist.get_rank()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    with open(sys.argv[1] + str(rank), "w") as f:
        f.write("%g" % t.item())
    if len(sys.argv) > 2 and sys.argv[2] == "fail" and rank == 1:
        raise ValueError("rank 1 failed on purpose after all_reduce")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
