"""Worker of the synchronous straggler test (docs/stragglers.md): a Gloo job whose ranks meet in
an all_reduce every step, as DDP's ranks do. Each step it beats the step when it starts and again
when its own work (a sleep of STEP_S seconds, the global rank SLOW_RANK 3x as long) is done and
it waits for the others; STEPS steps, then it exits 0."""
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
pause = float(os.environ.get("STEP_S", "0.15"))
if os.environ.get("SLOW_RANK") == str(rank):
    pause *= 3
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)
for step in range(int(os.environ["STEPS"])):
    print(step, file=beat)  # the step starts
    time.sleep(pause)       # this rank's own work
    print(step, file=beat)  # done: it waits for the others now
    dist.all_reduce(torch.ones(1))
# PyTorch 2.6's Gloo teardown is not what this tests: destroy_process_group() sometimes waits
# forever for a peer that has exited already, and leaving the group to the interpreter's exit
# sometimes aborts ("terminate called without an active exception"). Every step is done here.
beat.close()
os._exit(0)
