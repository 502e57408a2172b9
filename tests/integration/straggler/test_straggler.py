"""Straggler detection (docs/stragglers.md) with real ddprun agents on loopback.

    test_straggler.py DDPRUN DDP_RENDEZVOUS [TestClass]

A c10d pair (127.0.0.2 and .3, two workers each) on a standalone daemon with a status port;
the workers beat a step every 0.15 s, rank 3 3x as long in the slow cases:
- flagged: a `straggler` event for rank 3 in its node's event log only (join order decides
  which node holds ranks 2..3), /api/jobs and /metrics name it;
- balanced: no rank slow, none flagged after more steps than the slow case needed;
- one node (the in-process rendezvous): 4 workers, rank 3 flagged;
- --exclude-straggler: rank 3's node is removed (its agent exits, its event log says why) and
  the first goes on alone in round 2.
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
sys.path.insert(0, os.path.join(HERE, "..", "status"))
import statuslib  # noqa: E402
from procs import OutputProcess, wait_for  # noqa: E402

DDPRUN = DAEMON = None
WORKER = os.path.join(HERE, "straggler_worker.py")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60
CONF = "last_call_timeout=0.2,join_timeout=20,is_host=false"
REPORTS = ["--straggler-reports", "3"]


def events(path, kind):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [e for e in (json.loads(line) for line in f if line.startswith("{"))
                if e["event"] == kind]


class StragglerTest(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_straggler_")
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.procs = []
        self.daemon = statuslib.Daemon(self.tmp, DAEMON)
        self.addCleanup(self.daemon.stop)

    def tearDown(self):
        for p in self.procs:
            p.kill()
        self.tmpdir.cleanup()

    def pair(self, args, slow_rank=None, nnodes="2"):
        """The two agents; returns their event log paths."""
        logs = []
        for name, addr in (("a", "127.0.0.2"), ("b", "127.0.0.3")):
            env = dict(os.environ, MARK_DIR=self.marks)
            if slow_rank is not None:
                env["SLOW_RANK"] = str(slow_rank)
            logs.append(os.path.join(self.tmp, name + ".jsonl"))
            argv = [DDPRUN, "--nproc-per-node", "2", "--shutdown-timeout", "5", "--python",
                    PYTHON, "--nnodes", nnodes, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                    "127.0.0.1:%d" % self.daemon.port, "--rdzv-id", "strag", "--rdzv-conf", CONF,
                    "--local-addr", addr, "--event-log", logs[-1]] + args + [WORKER]
            self.procs.append(OutputProcess(self.tmp, name, argv, env, timeout=DEADLINE_S))
        return logs

    def job(self):
        return statuslib.jobs(self.daemon.status_port).get("strag")

    def slow_node(self, logs):
        """The index of the node whose first round holds ranks 2..3 (join order decides)."""
        wait_for(lambda: all(events(log, "round") for log in logs), 40, "both nodes' rounds")
        offsets = [events(log, "round")[0]["rank_offset"] for log in logs]
        self.assertEqual(sorted(offsets), [0, 2])
        return offsets.index(2)

    def stop_workers(self):
        with open(os.path.join(self.marks, "stop"), "w"):
            pass

    def test_a_rank_3x_slower_is_flagged(self):
        logs = self.pair(REPORTS, slow_rank=3)
        slow = self.slow_node(logs)
        slow_log, fast_log = logs[slow], logs[1 - slow]
        wait_for(lambda: events(slow_log, "straggler"), 40, "a straggler event on rank 3's node")
        flagged = events(slow_log, "straggler")[0]
        self.assertEqual(flagged["rank"], 3)
        self.assertFalse(flagged["removed"])
        self.assertGreater(flagged["step_time_seconds"], 2 * flagged["median_seconds"])
        j = self.job()
        self.assertEqual(j["stragglers"], 1)
        self.assertEqual(j["slow_ranks"][0]["rank"], 3)
        self.assertTrue(j["slow_ranks"][0]["straggler"])
        self.assertEqual([r["straggler"] for r in j["slow_ranks"]], [True, False, False, False])
        m = statuslib.metrics(self.daemon.status_port)
        self.assertEqual(m[("ddp_rdzv_rank_straggler", '{run_id="strag",rank="3"}')], 1)
        self.assertEqual(m[("ddp_rdzv_rank_straggler", '{run_id="strag",rank="0"}')], 0)
        self.assertEqual(m[("ddp_rdzv_job_stragglers", '{run_id="strag"}')], 1)
        self.assertGreater(m[("ddp_rdzv_rank_step_seconds", '{run_id="strag",rank="3"}')], 0.3)
        self.stop_workers()
        for p in self.procs:
            self.assertEqual(p.wait(), 0, p.stderr())
        self.assertEqual(events(fast_log, "straggler"), [])
        self.assertEqual(len(events(slow_log, "straggler")), 1)  # flagged once

    def test_one_node(self):
        log = os.path.join(self.tmp, "one.jsonl")
        env = dict(os.environ, MARK_DIR=self.marks, SLOW_RANK="3")
        agent = OutputProcess(self.tmp, "one", [DDPRUN, "--nproc-per-node", "4", "--python", PYTHON,
                                                "--event-log", log] + REPORTS + [WORKER],
                              env, timeout=DEADLINE_S)
        self.procs.append(agent)
        wait_for(lambda: events(log, "straggler"), 40, "a straggler event on the single node")
        self.assertEqual([e["rank"] for e in events(log, "straggler")], [3])
        self.stop_workers()
        self.assertEqual(agent.wait(), 0, agent.stderr())

    def test_a_balanced_job_has_none(self):
        a_log, b_log = self.pair(REPORTS)
        # 60 steps of 0.15 s: ~9 progress reports per node, three times what flags a straggler.
        wait_for(lambda: ((self.job() or {}).get("best_step") or 0) >= 60, 40, "60 steps")
        j = self.job()
        self.assertEqual(j["stragglers"], 0)
        self.assertFalse(any(r["straggler"] for r in j["slow_ranks"]))
        self.assertGreater(j["median_step_seconds"], 0.1)
        self.stop_workers()
        for p in self.procs:
            self.assertEqual(p.wait(), 0, p.stderr())
        self.assertEqual(events(a_log, "straggler") + events(b_log, "straggler"), [])

    def test_exclude_straggler_removes_the_slow_node(self):
        logs = self.pair(REPORTS + ["--exclude-straggler"], slow_rank=3, nnodes="1:2")
        slow = self.slow_node(logs)
        slow_log, fast_log = logs[slow], logs[1 - slow]
        slow_agent, fast_agent = self.procs[slow], self.procs[1 - slow]
        self.assertNotEqual(slow_agent.wait(), 0, slow_agent.stderr())
        self.assertIn("persistent straggler", slow_agent.stderr())
        self.assertTrue(events(slow_log, "straggler")[0]["removed"])
        self.assertIn("persistent straggler", events(slow_log, "lost")[0]["reason"])
        wait_for(lambda: [r for r in events(fast_log, "round") if r["round"] == 2], 40,
                 "the other node to go on alone in round 2")
        self.assertEqual(events(fast_log, "round")[-1]["world_size"], 2)
        self.stop_workers()
        self.assertEqual(fast_agent.wait(), 0, fast_agent.stderr())
        self.assertEqual(events(fast_log, "straggler"), [])


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    DAEMON = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
