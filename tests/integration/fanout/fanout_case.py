"""What the fan-out tests share: the launching ddprun as a child (Launcher), and a test case
(FanoutCase) that gives every process it starts a marker variable and kills whatever still
carries it at the end.

Leftover processes are found by that marker (FANOUT_MARK=<unique>), which the agents and
workers inherit: /proc/*/environ is scanned (every namespace shares the PID namespace).

A test file sets DDPRUN here before running its tests:
    fanout_case.DDPRUN = os.path.abspath(sys.argv[1])
"""
import glob
import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from procs import OutputProcess, wait_for  # noqa: E402

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def all_cmdlines():
    """(pid, command line) of every process now, arguments joined by spaces."""
    out = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append((int(path.split("/")[2]), cmd))
        except (OSError, ValueError):
            pass
    return out


def marked_processes(mark):
    """(pid, cmdline, environ) of every process whose environment holds FANOUT_MARK=mark."""
    found = []
    needle = ("FANOUT_MARK=" + mark).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append((int(pid), cmd, env))
    return found




class Launcher(OutputProcess):
    def __init__(self, tmp, args, env):
        super().__init__(tmp, "launcher", [DDPRUN] + args, env, cwd=tmp, timeout=90)


class FanoutCase(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddprun-fanout-")
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.mark = "fanout-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.launchers = []

    def tearDown(self):
        for launcher in self.launchers:
            launcher.kill()
        for pid, _, _ in marked_processes(self.mark):  # never leave anything behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.tmpdir.cleanup()

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PBS_", "SLURM_", "PET_"))}
        env.update({"FANOUT_MARK": self.mark, "MARK_DIR": self.marks, "DDPRUN_PYTHON": PYTHON})
        env.update(extra)
        return env

    def start(self, args, **extra):
        launcher = Launcher(self.tmp, args, self.env(**extra))
        self.launchers.append(launcher)
        return launcher

    def assert_nothing_left(self, deadline_s=20, where=None):
        def gone():
            left = marked_processes(self.mark)
            if where is not None:
                left = [p for p in left if where(p)]
            return not left
        try:
            wait_for(gone, deadline_s, "every marked process to exit")
        except AssertionError:
            left = "\n".join("%d %s" % (pid, cmd) for pid, cmd, _ in marked_processes(self.mark))
            self.fail("processes left behind:\n" + left)

    def marks_named(self, prefix):
        return [n for n in os.listdir(self.marks) if n.startswith(prefix)]
