"""Shared helpers of the integration tests that run several real processes.

    sys.path.insert(0, os.path.join(HERE, "..", "testlib")); from procs import ...
"""
import os
import socket
import subprocess
import time


def poll_until(predicate, deadline_s, period_s=0.02):
    """True once predicate() holds, False after deadline_s. For conditions no event announces:
    files other processes write, processes that are not our children, kernel state."""
    end = time.monotonic() + deadline_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(period_s)  # polling period of the condition, not a wait for an event


def wait_for(predicate, deadline_s, what, period_s=0.02):
    """Returns once predicate() is true; AssertionError naming `what` after deadline_s."""
    if not poll_until(predicate, deadline_s, period_s):
        raise AssertionError("timed out waiting for " + what)


def free_port(host="127.0.0.1"):
    """A port free right now. For ports every process must know before the one that binds it
    starts (a rendezvous endpoint, a master port): a tiny race with other programs."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def close_unanswered(listener, connections=2):
    """Accepts `connections` connections on `listener` (a listening socket) one after the
    other, reads each one's first bytes (a JOIN) and closes it unanswered: a daemon exiting
    under a client. A second connection comes only if the client retried. Closes `listener`."""
    listener.settimeout(20)
    try:
        for _ in range(connections):
            conn, _ = listener.accept()
            conn.settimeout(20)
            conn.recv(65536)
            conn.close()
    finally:
        listener.close()


class OutputProcess:
    """A process whose stdout and stderr go to files TMP/NAME.out and TMP/NAME.err."""

    def __init__(self, tmp, name, argv, env, cwd=None, timeout=40):
        self.out_path = os.path.join(tmp, name + ".out")
        self.err_path = os.path.join(tmp, name + ".err")
        self.timeout = timeout
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd,
                                         stdin=subprocess.DEVNULL)

    def wait(self, timeout=None):
        return self.proc.wait(timeout=self.timeout if timeout is None else timeout)

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def stdout(self):
        return self.read(self.out_path)

    def stderr(self):
        return self.read(self.err_path)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
