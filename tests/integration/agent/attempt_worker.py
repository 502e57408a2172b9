"""A Gloo worker for the restart tests (test_fresh_store.py), for PyTorch 1.13 and 2.x.

usage: attempt_worker.py OUT_DIR LAST_ATTEMPT

Joins the group with init_process_group(init_method="env://") (the agent's store), then runs
five all_reduce steps. In every attempt before LAST_ATTEMPT (TORCHELASTIC_RESTART_COUNT), rank 1
exits 13 after its third step; in LAST_ATTEMPT every rank finishes and rank 0 checks that every
step summed the ranks of this attempt's group, then writes OUT_DIR/ok. Each attempt's rank
writes OUT_DIR/attempt_<N>_rank_<R> once its group formed and its first step was right, so the
test sees that every attempt formed its group, not only the last.
"""
import os
import sys

import torch
import torch.distributed as dist

out_dir, last = sys.argv[1], int(sys.argv[2])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
expected = world * (world - 1) / 2 + world * attempt
for step in range(5):
    t = torch.tensor([float(rank + attempt)])
    dist.all_reduce(t)
    if t.item() != expected:
        sys.exit("attempt %d step %d: sum %s, expected %s" % (attempt, step, t.item(), expected))
    if step == 0:
        open(os.path.join(out_dir, "attempt_%d_rank_%d" % (attempt, rank)), "w").close()
    if step == 2 and rank == 1 and attempt < last:
        os._exit(13)
if rank == 0:
    open(os.path.join(out_dir, "ok"), "w").close()
# No destroy_process_group(): in PyTorch 2.6 the Gloo group's destructor joins its work thread
# while holding the GIL, and that thread may need the GIL to free a tensor: a deadlock seen here
# 2 times in one suite run (pytorch/pytorch#154976, fixed in 2.8). Every all_reduce above has
# returned on every rank, so leaving now loses nothing.
sys.stdout.flush()
os._exit(0)
