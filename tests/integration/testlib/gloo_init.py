"""init_process_group("gloo") from the environment (RANK, WORLD_SIZE, MASTER_ADDR/PORT) for test
workers that run outside ddprun, under PyTorch 1.13 or 2.x (testlib/torch_python.py).

PyTorch 2.4+ clients default to use_libuv=True, which a build without libuv (Debian 13's 2.6)
refuses under env:// (ddprun patches that in the workers it starts; these tests start theirs
themselves). There the same client env:// would make is built with use_libuv=False (a client's
flag changes nothing on the wire) and the default group is made on it. Keys: 2.x under
TORCHELASTIC_USE_AGENT_STORE uses the store unprefixed, as env:// does; 1.13 keeps env://.
"""
import datetime
import os

import torch
import torch.distributed as dist


def init_gloo_from_env(timeout=datetime.timedelta(seconds=60)):
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 4):
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=False, timeout=timeout, use_libuv=False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
