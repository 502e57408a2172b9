"""Worker of the straggler tests (docs/stragglers.md): beats a step every STEP_S seconds (default
0.15), the global rank SLOW_RANK (if set) 3x as long, until MARK_DIR/stop exists; then exits 0."""
import os
import sys
import time

rank = int(os.environ["RANK"])
pause = float(os.environ.get("STEP_S", "0.15"))
if os.environ.get("SLOW_RANK") == str(rank):
    pause *= 3
stop = os.path.join(os.environ["MARK_DIR"], "stop")
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)
step = 0
while not os.path.exists(stop):
    print(step, file=beat)
    step += 1
    time.sleep(pause)  # the step's work
sys.exit(0)
