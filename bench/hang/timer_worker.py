"""Worker of the hang benchmark: every worker writes its pid; rank 1 arms PyTorch's file timer
for 2 s around a stall and writes the timer's expiry (epoch seconds); rank 0 waits to be
stopped. Same script for torchrun and ddprun (TORCHELASTIC_ENABLE_FILE_TIMER=1 on both)."""
import os
import sys
import time

import torch.distributed.elastic.timer as timer

out = sys.argv[1]
rank = int(os.environ["RANK"])
with open(os.path.join(out, "pid_%d" % rank), "w") as f:
    f.write(str(os.getpid()))
if rank == 1:
    timer.configure(timer.FileTimerClient(file_path=os.environ["TORCHELASTIC_TIMER_FILE"]))
    with timer.expires(after=2, scope="stalled"):
        with open(os.path.join(out, "expiry"), "w") as f:
            f.write("%.6f" % (time.time() + 2))
        time.sleep(3600)
time.sleep(3600)
