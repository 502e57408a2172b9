"""Worker of the diagnosis hang test (test_diagnosis.py). In attempt 0 the worker with
FAIL_HERE=1 and LOCAL_RANK=1 beats once, prints a line and stalls in stall_here(); every other
worker beats every 0.1 s. In later attempts every worker beats until $MARK_DIR/release exists,
then exits 0."""
import os
import sys
import time

marks = os.environ["MARK_DIR"]
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
open(os.path.join(marks, "started.%s.%s.%s" % (os.environ["GROUP_RANK"],
                                               os.environ["LOCAL_RANK"], attempt)), "w").close()
beat = open(os.environ["DDPRUN_HEARTBEAT_FILE"], "w", buffering=1)


def stall_here():
    time.sleep(3600)


if attempt == "0" and os.environ.get("FAIL_HERE") == "1" and os.environ["LOCAL_RANK"] == "1":
    print(1, file=beat)
    print("rank %s stalls now" % os.environ["RANK"], flush=True)
    stall_here()
for step in range(3000):
    if attempt != "0" and os.path.exists(os.path.join(marks, "release")):
        sys.exit(0)
    print(step, file=beat)
    time.sleep(0.1)  # one training step; also the polling period of the release file
sys.exit(1)
