"""A worker of the requeue job-script tests (docs/progress.md): MODE=die exits 1 before its
first heartbeat; MODE=step beats one step past every earlier attempt's, then exits 1 (so every
round makes progress and only --max-restarts ends the job)."""
import os
import sys

if os.environ.get("MODE") == "step":
    with open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w") as beat:
        print(1000 * int(os.environ["TORCHELASTIC_RESTART_COUNT"]) + 1, file=beat)
sys.exit(1)
