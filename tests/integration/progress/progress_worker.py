"""Workers of the progress and goodput tests (docs/progress.md, docs/goodput.md).

MODE=die       exits 1 before its first heartbeat, in every attempt.
MODE=schedule  starts up for STARTUP_S seconds (default 0.5), then beats a step every 20 ms
               for STEP_S seconds (default 1.5) of its own clock;
               after every beat it writes the wall times of its first and last step beat of
               the attempt to MARK_DIR/beats.<attempt>.<rank> (so a worker stopped by SIGTERM
               leaves its true last beat); then in attempt 0 rank 0 exits 1 and the others
               wait to be stopped, in later attempts every worker exits 0.
"""
import json
import os
import signal
import sys
import time

if os.environ["MODE"] == "die":
    sys.exit(1)
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])
marks = os.environ["MARK_DIR"]
step_s = float(os.environ.get("STEP_S", "1.5"))
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)
time.sleep(float(os.environ.get("STARTUP_S", "0.5")))  # start-up before the first step: the schedule
record = os.path.join(marks, "beats.%d.%d" % (attempt, rank))
start = time.monotonic()
first = None
step = 1000 * attempt  # every attempt passes the last one's steps
while True:
    print(step, file=beat)
    last = time.time()
    first = first or last
    with open(record + ".tmp", "w") as f:
        json.dump({"first": first, "last": last}, f)
    os.replace(record + ".tmp", record)
    if time.monotonic() - start >= step_s:
        break
    step += 1
    time.sleep(0.02)  # the step's work: the schedule itself
if attempt == 0:
    if rank == 0:
        sys.exit(1)
    signal.pause()  # until the job stops the others for rank 0's failure (SIGTERM)
sys.exit(0)
