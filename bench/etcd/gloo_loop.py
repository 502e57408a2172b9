# Benchmark worker: marks its start (time, world size, attempt), joins the Gloo group through
# the agent's store, then all-reduces in a loop. A world of 1 exits 0 once the benchmark has
# killed, frozen or cut off the other node (MARK_DIR/killed), else waits to be restarted into
# the bigger world;
# BENCH_ONCE=1 exits at once (rendezvous timing).
import os
import time

start = time.time()
marks = os.environ["MARK_DIR"]
if os.environ["WORLD_SIZE"] == "1" and not os.path.exists(os.path.join(marks, "killed")):
    marks = os.path.join(marks, "early")  # a round before the loss: not the recovery
    os.makedirs(marks, exist_ok=True)
mark = os.path.join(marks, "start.%s.%s.%d" % (
    os.environ["WORLD_SIZE"], os.environ["RANK"], os.getpid()))
with open(mark + ".tmp", "w") as f:
    f.write("%.6f" % start)
os.rename(mark + ".tmp", mark)  # readers never see it half written
if os.environ.get("BENCH_ONCE") == "1":
    raise SystemExit(0)
if os.environ["WORLD_SIZE"] == "1":
    while not os.path.exists(os.path.join(os.environ["MARK_DIR"], "killed")):
        time.sleep(0.05)  # polling period of the file; the agent stops this worker anyway
    raise SystemExit(0)

import datetime  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

# A collective whose peer died would otherwise wait Gloo's default 30 minutes; 5 s lets a
# launcher that does not notice a lost node itself (torchrun's etcd-v2) hear of it this way.
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=5))
t = torch.zeros(1)
while True:  # until a peer is lost (the all-reduce fails) or the agent stops this worker
    dist.all_reduce(t)
    time.sleep(0.05)  # the training step's pace
