"""What the worker SDK integration tests share: real worker processes whose stdout lines are
waited for with deadlines (Worker), their environment as an agent would set it (worker_env),
a PyTorch TCPStore standing in for the agent's store, and a test case that kills every worker
it started (SdkCase). Each test file's class is named WorkerSdkTest: its CTest tests are
worker_sdk_it.<test>, running WorkerSdkTest.<test>.

A test file's main takes the binaries from its arguments:
    ARGS, rest = sdk_case.parse_args()
"""
import argparse
import datetime
import os
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from torch.distributed import TCPStore

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))

DEADLINE = 60.0  # seconds any single worker group may take


def free_port():
    # Rank-0-hosted mode needs a port chosen before rank 0 starts: bind, read, close.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(rank, world, port, agent_store, restart=0, extra=None):
    env = dict(os.environ)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True" if agent_store else "False",
        "TORCHELASTIC_RESTART_COUNT": str(restart), "OMP_NUM_THREADS": "1",
    })
    env.update(extra or {})
    return env


class Worker:
    """A child process whose stdout lines are collected by a thread (waitable with deadlines)."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        self._stderr = []
        self._readers = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_out(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self):
        return "".join(self._stderr)

    def wait_line(self, pattern, timeout=DEADLINE):
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout}s; "
                                     f"saw {self.seen}")
            if line is None:
                raise AssertionError(f"output ended before {pattern!r}; saw {self.seen}")
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def finish(self, timeout=DEADLINE):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.proc.args} did not exit within {timeout}s")
        for t in self._readers:
            t.join(timeout)
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                self.lines.put(None)  # keep the end marker for later calls
                break
            self.seen.append(line)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()



class SdkCase(unittest.TestCase):
    def setUp(self):
        self.workers = []
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_sdk_it_")

    def tearDown(self):
        for w in self.workers:
            w.kill()
        self.tmp.cleanup()

    def start(self, argv, env):
        w = Worker(argv, env)
        self.workers.append(w)
        return w

    def agent_store(self, world):
        # Stands in for the agent's worker store: a PyTorch TCPStore server on a port-0 socket.
        return TCPStore("127.0.0.1", 0, world, True, datetime.timedelta(seconds=30),
                        wait_for_workers=False)

    def finish_all(self, workers):
        for w in workers:
            code = w.finish()
            self.assertEqual(code, 0, f"{w.proc.args} exited {code}\n{w.stderr}")


def parse_args():
    """`--probe BIN --train BIN --interop BIN --python-rank SCRIPT [--ddprun BIN]
    [--torch2-build DIR] [--torch214-build DIR]` of the
    command line as a namespace, and the unittest arguments left."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--train", required=True)
    parser.add_argument("--interop", required=True)
    parser.add_argument("--python-rank", required=True)
    parser.add_argument("--ddprun", default="")
    parser.add_argument("--torch2-build", default="")  # root_build_trixie's build folder
    parser.add_argument("--torch214-build", default="")  # root_build_sid's
    return parser.parse_known_args()
