"""Worker of the straggler tests (docs/stragglers.md): beats a step every STEP_S seconds (default
0.15), the global rank SLOW_RANK (if set; "all": every worker of the agent) 3x as long (with
SLOW_AFTER_MARK=1: only once MARK_DIR/slow exists), until MARK_DIR/stop exists; then exits 0."""
import os
import sys
import time

rank = int(os.environ["RANK"])
pause = float(os.environ.get("STEP_S", "0.15"))
slow = os.environ.get("SLOW_RANK") in (str(rank), "all")
gate = os.path.join(os.environ["MARK_DIR"], "slow") if os.environ.get("SLOW_AFTER_MARK") else None
stop = os.path.join(os.environ["MARK_DIR"], "stop")
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)
step = 0
while not os.path.exists(stop):
    print(step, file=beat)
    step += 1
    # the step's work
    time.sleep(pause * 3 if slow and (gate is None or os.path.exists(gate)) else pause)
sys.exit(0)
