"""Straggler detection in a synchronous job (docs/stragglers.md): ranks that meet in a collective
every step all take the slowest rank's step time, so the slow rank is told by its own work, the
time from a step's first beat to the beat repeating it before the collective.

    test_sync_straggler.py DDPRUN [TestClass]

One node, four PyTorch workers (1.13, and 2.x as the _torch2 twin; Gloo) in an all_reduce per step, beating each step twice:
- rank 3 working 3x as long is flagged, and no other rank;
- a balanced job has none.
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import torch_python  # noqa: E402
from procs import OutputProcess  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "sync_worker.py")
DEADLINE_S = 120


def events(path, kind):
    with open(path) as f:
        return [e for e in (json.loads(line) for line in f if line.startswith("{"))
                if e["event"] == kind]


class SyncStragglerTest(unittest.TestCase):
    def setUp(self):
        self.python = torch_python.worker_python(self)  # first: a skip leaves nothing to clean up
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_sync_straggler_")
        self.addCleanup(self.tmpdir.cleanup)

    def run_job(self, steps, slow_rank=None):
        """Runs the 4-worker job to its end; returns its straggler events."""
        log = os.path.join(self.tmpdir.name, "events.jsonl")
        env = dict(os.environ, STEPS=str(steps))
        if slow_rank is not None:
            env["SLOW_RANK"] = str(slow_rank)
        agent = OutputProcess(self.tmpdir.name, "one",
                              [DDPRUN, "--nproc-per-node", "4", "--python", self.python,
                               "--straggler-reports", "3", "--event-log", log, WORKER],
                              env, timeout=DEADLINE_S)
        self.addCleanup(agent.kill)
        self.assertEqual(agent.wait(), 0, agent.stderr())
        return events(log, "straggler")

    def test_the_rank_whose_work_is_3x_slower_is_flagged(self):
        # 20 steps of 0.45 s: about 9 progress reports, three flag the rank.
        flagged = self.run_job(20, slow_rank=3)
        self.assertEqual([e["rank"] for e in flagged], [3])
        # Its own work (~0.45 s) against the others' (~0.15 s), not the shared step (~0.45 s).
        self.assertGreater(flagged[0]["step_time_seconds"], 2 * flagged[0]["median_seconds"])
        self.assertLess(flagged[0]["median_seconds"], 0.3)

    def test_a_balanced_job_has_none(self):
        self.assertEqual(self.run_job(40), [])


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
