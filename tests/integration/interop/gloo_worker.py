"""One rank of the Gloo interop test: env:// init against the agent store, then all-reduce.

Reads RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT and TORCHELASTIC_* from the environment (set by
test_gloo_allreduce.py). Prints "rank R result [..]" and exits 0 when the sum is right.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from gloo_init import init_gloo_from_env  # noqa: E402  (1.13 or 2.x, with or without libuv)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    init_gloo_from_env(datetime.timedelta(seconds=60))
    if dist.get_rank() != rank or dist.get_world_size() != world:
        sys.exit(f"rank {rank}: process group says rank {dist.get_rank()} "
                 f"of {dist.get_world_size()}")
    t = torch.arange(4, dtype=torch.float32) + 10.0 * (rank + 1)
    dist.all_reduce(t)
    expected = torch.arange(4, dtype=torch.float32) * world + 10.0 * world * (world + 1) / 2
    print(f"rank {rank} result {t.tolist()}", flush=True)
    if not torch.equal(t, expected):
        sys.exit(f"rank {rank}: all_reduce gave {t.tolist()}, expected {expected.tolist()}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
