"""A Gloo worker for the hang tests: one all_reduce per step, a heartbeat per step (the
documented two-line snippet), and a stall on demand.

  HANG_RANK=r HANG_STEP=s   rank r sleeps (before its beat and its all_reduce) at step s of
                            attempt 0 only (TORCHELASTIC_RESTART_COUNT)
  STEPS=n                   steps to run (default 8); STEP_SECONDS=t pause per step (0.05)
  NO_BEAT=1                 never beat
  BEAT_LOG=prefix           each beat also writes "step epoch_seconds" to prefix<rank>
  JUNK=1                    write binary junk to the heartbeat channel first
"""
import os
import time

import torch
import torch.distributed as dist

# The heartbeat snippet of docs/hangs.md.
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1) if "DDPRUN_HEARTBEAT_FILE" in os.environ else None

rank = int(os.environ["RANK"])
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
hang_rank = int(os.environ.get("HANG_RANK", "-1"))
hang_step = int(os.environ.get("HANG_STEP", "-1"))
steps = int(os.environ.get("STEPS", "8"))
pause = float(os.environ.get("STEP_SECONDS", "0.05"))
no_beat = os.environ.get("NO_BEAT") == "1"
beat_log = os.environ.get("BEAT_LOG")
if beat and os.environ.get("JUNK") == "1":
    beat.buffer.write(b"\x00\xff garbage \x80\n" + b"x" * 200 + b"\nnot-a-step\n")
    beat.flush()

dist.init_process_group("gloo")
t = torch.ones(4)
for step in range(steps):
    if rank == hang_rank and step == hang_step and attempt == 0:
        time.sleep(3600)  # the stall
    if beat and not no_beat:
        print(step, file=beat)
        if beat_log:
            with open(beat_log + str(rank), "w") as f:
                f.write("%d %.6f" % (step, time.time()))
    dist.all_reduce(t)
    time.sleep(pause)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} done after {steps} steps (attempt {attempt})")
