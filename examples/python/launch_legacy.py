"""A script written for `python -m torch.distributed.launch`: it takes its local rank from a
`--local_rank` argument, which that launcher appends. ddprun runs it unchanged with
--local-rank-arg underscore (PyTorch 1.x's spelling; `dash` gives --local-rank=<n>):

    python -m torch.distributed.launch --nproc_per_node=3 --master_port=$RANDOM \\
        launch_legacy.py --gpu-ids 1,6,3
    ddprun --local-rank-arg underscore --nproc_per_node=3 --master_port=$RANDOM \\
        launch_legacy.py --gpu-ids 1,6,3
"""
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, required=True)
parser.add_argument("--gpu-ids", default="", help="the GPU of each local rank, e.g. 1,6,3")
args = parser.parse_args()

gpus = [int(g) for g in args.gpu_ids.split(",") if g]
if torch.cuda.is_available() and gpus:
    torch.cuda.set_device(gpus[args.local_rank])
    device, backend = torch.device("cuda"), "nccl"
else:
    device, backend = torch.device("cpu"), "gloo"
dist.init_process_group(backend, init_method="env://")
t = torch.ones(1, device=device) * (dist.get_rank() + 1)
dist.all_reduce(t)
gpu = gpus[args.local_rank] if args.local_rank < len(gpus) else "-"
print(f"rank {dist.get_rank()} local_rank {args.local_rank} gpu {gpu} backend {backend} "
      f"sum {t.item():g}", flush=True)
dist.destroy_process_group()
