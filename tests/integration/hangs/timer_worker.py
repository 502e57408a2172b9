"""A worker using PyTorch's own file timer client, unmodified torchrun style: rank 1 arms a
1 s timer around a stall (scope "stalled_step") in attempt 0; rank 0 arms and releases timers
around quick work. With TIMER_SIGNAL set, that signal is asked for instead of SIGKILL."""
import os
import signal
import time

import torch.distributed.elastic.timer as timer

rank = int(os.environ["RANK"])
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
sig = int(os.environ.get("TIMER_SIGNAL", str(int(signal.SIGKILL))))
timer.configure(timer.FileTimerClient(file_path=os.environ["TORCHELASTIC_TIMER_FILE"], signal=sig))

for i in range(20):
    with timer.expires(after=5, scope="quick_step"):
        time.sleep(0.01)
if rank == 1 and attempt == 0:
    with timer.expires(after=1, scope="stalled_step"):
        time.sleep(3600)
print(f"rank {rank} done (attempt {attempt})")
