# A PyTorch rank that joins the same job as C++ SDK ranks: init_process_group("gloo") from
# the environment, all-reduce (rank + 1) as float64, print the same JSON as sdk_probe, barrier.
import json
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from gloo_init import init_gloo_from_env  # noqa: E402  (1.13 or 2.x, with or without libuv)

init_gloo_from_env()
t = torch.tensor([dist.get_rank() + 1.0], dtype=torch.float64)
dist.all_reduce(t)
print(json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
                  "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))}), flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0)
