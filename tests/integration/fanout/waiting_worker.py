# A worker that marks itself started (MARK_DIR/waiting.<RANK>) and then waits to be stopped:
# the point is to be running when the test interrupts the launcher.
import os
import signal
import sys

open(os.path.join(os.environ["MARK_DIR"], "waiting." + os.environ["RANK"]), "w").close()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
while True:
    signal.pause()
