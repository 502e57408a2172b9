"""What the event log tests share (--event-log, docs/event_log.md): reading a log back line by
line with the key order checked, the checks every line must pass (Checks), and a single-node
ddprun run in a temporary directory (SingleNodeBase).

A test file sets DDPRUN here before running its tests:
    event_log_case.DDPRUN = os.path.abspath(sys.argv.pop(1))
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))

DDPRUN = None
WORKER = os.path.join(HERE, "worker.py")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60
HEADER = ["ts", "ts_unix", "event", "run_id", "host", "agent_pid", "round", "restart_count",
          "group_rank"]


def read_events(path):
    with open(path) as f:
        return parse_events(f.read())


def parse_events(text):
    """Every line of `text` that is an event, parsed; the key order checked."""
    events = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        keys = list(json.loads(line, object_pairs_hook=lambda pairs: pairs))
        keys = [k for k, _ in keys]
        assert keys[:len(HEADER)] == HEADER, keys
        events.append(json.loads(line))
    return events


def names(events):
    return [e["event"] for e in events]


class Checks(unittest.TestCase):
    def check_common(self, events, run_id):
        """Every line: the run id, this host, one agent pid, a well-formed time that never goes
        back and agrees with ts_unix."""
        self.assertTrue(events)
        pids = {e["agent_pid"] for e in events}
        self.assertEqual(len(pids), 1)
        last = 0.0
        for e in events:
            self.assertEqual(e["run_id"], run_id)
            self.assertEqual(e["host"], os.uname().nodename)
            stamp = datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            self.assertEqual(len(e["ts"]), len("2026-11-24T22:35:00.123Z"))
            stamp = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
            self.assertAlmostEqual(stamp, e["ts_unix"], places=3)
            self.assertGreaterEqual(e["ts_unix"], last)
            last = e["ts_unix"]

    def assert_in_order(self, events, expected):
        """`expected` (event names) appear in this order, others may come between."""
        got = names(events)
        i = 0
        for name in got:
            if i < len(expected) and name == expected[i]:
                i += 1
        self.assertEqual(i, len(expected), "wanted %s in order, got %s" % (expected, got))


class SingleNodeBase(Checks):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_event_log_it_")
        self.out = os.path.join(self.tmp.name, "out")
        os.mkdir(self.out)
        self.log = os.path.join(self.tmp.name, "events.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def env(self):
        return dict(os.environ, TMPDIR=self.tmp.name)

    def run_ddprun(self, nproc, mode, *mode_args, extra=(), program=None):
        program = program or ["--no-python", PYTHON, WORKER, self.out, mode,
                              *[str(a) for a in mode_args]]
        return subprocess.run([DDPRUN, "--nproc-per-node", str(nproc), *extra, *program],
                              env=self.env(), capture_output=True, timeout=DEADLINE_S)

    def record(self, attempt, rank):
        with open(os.path.join(self.out, "a%d_r%d.json" % (attempt, rank))) as f:
            return json.load(f)

    def check_refused(self, path, *needles):
        r = self.run_ddprun(2, "ok", extra=["--event-log", path])
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertTrue(err.startswith("ddprun: error: --event-log " + path), err)
        for needle in needles:
            self.assertIn(needle, err)
        self.assertEqual(os.listdir(self.out), [], "a worker was started")
