"""A worker for test_unkillable.py. What each local rank does is in ACTION_<local rank>:
  stat    stat the stuck file system's root: never answered (interruptible until a signal)
  stat-d  the same, with a handled SIGALRM arriving mid-call: the kernel then waits
          uninterruptibly (D state) for the answer
  fail    wait until the file system holds a request (HELD_FIFO), then exit 3
  sleep   sleep until stopped
Every rank first prints its pid."""
import os
import signal
import sys

rank = os.environ["LOCAL_RANK"]
action = os.environ.get("ACTION_" + rank, "")
print("pid", os.getpid(), flush=True)
if action.startswith("stat"):
    if action == "stat-d":
        signal.signal(signal.SIGALRM, lambda *_: None)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
    os.stat(os.environ["STUCK_MOUNT"])
    print("the stat returned", flush=True)
    sys.exit(0)
if action == "sleep":
    signal.pause()
if action == "fail":
    with open(os.environ["HELD_FIFO"], "rb") as f:
        f.read(1)
    sys.exit(3)
