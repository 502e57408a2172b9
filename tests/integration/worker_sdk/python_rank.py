# A PyTorch rank that joins the same job as C++ SDK ranks: init_process_group("gloo",
# "env://") as a worker under ddprun or torchrun does, all-reduce (rank + 1) as float64, print
# the same JSON as sdk_probe, barrier. Its PyTorch must be the one the SDK was built against
# (1.13 or 2.x: their init_process_group lay out the store keys differently).
import datetime
import importlib
import json
import os
import sys

import torch
import torch.distributed as dist

# The module (torch.distributed.rendezvous is also a function's name in torch.distributed).
rdzv = importlib.import_module("torch.distributed.rendezvous")

if hasattr(rdzv, "_get_use_libuv_from_query_dict"):
    # PyTorch >= 2.2 makes env://'s client of the agent store with TCPStore's default
    # use_libuv=True (it passes no use_libuv there), which a build without libuv (Debian 13's
    # 2.6) refuses; ddprun patches the same in the workers it starts. This is 2.6's agent-store
    # branch with use_libuv=False (a client's flag changes nothing on the wire); the rest of
    # env:// runs unchanged.
    _create = rdzv._create_c10d_store

    def _create_c10d_store(host, port, rank, world, timeout, use_libuv=True):
        if not rdzv._torchelastic_use_agent_store():
            return _create(host, port, rank, world, timeout, use_libuv=False)
        return rdzv.TCPStore(host_name=host, port=port, world_size=world, is_master=False,
                             timeout=timeout, use_libuv=False)

    rdzv._create_c10d_store = _create_c10d_store

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([dist.get_rank() + 1.0], dtype=torch.float64)
dist.all_reduce(t)
print(json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
                  "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))}), flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0)
