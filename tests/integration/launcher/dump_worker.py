"""A worker that records what ddprun gave it: argv and the variables the launcher tests check,
as JSON in $DDPRUN_TEST_OUT/rank<RANK>.json (RANK: LOCAL_RANK is 0 for every worker
under --virtual-local-rank)."""
import json
import os
import sys

NAMES = ("LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
         "ROLE_NAME", "TORCHELASTIC_MAX_RESTARTS")
record = {"argv": sys.argv[1:], "env": {n: os.environ.get(n) for n in NAMES}}
path = os.path.join(os.environ["DDPRUN_TEST_OUT"], f"rank{os.environ['RANK']}.json")
with open(path, "w") as f:
    json.dump(record, f)
