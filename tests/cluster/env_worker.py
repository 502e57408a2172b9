"""A worker that records what ddprun gave it, as JSON in $DDP_CLUSTER_TEST_OUT/rank<RANK>.json:
its argv, working directory and the variables the cluster tests check."""
import json
import os
import sys

NAMES = ("LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE", "GROUP_WORLD_SIZE",
         "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "SLURM_JOB_ID")
record = {"argv": sys.argv[1:], "cwd": os.getcwd(),
          "env": {n: os.environ.get(n) for n in NAMES}}
with open(os.path.join(os.environ["DDP_CLUSTER_TEST_OUT"], f"rank{os.environ['RANK']}.json"),
          "w") as f:
    json.dump(record, f)
