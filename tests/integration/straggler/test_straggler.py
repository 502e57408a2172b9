"""Straggler detection (docs/stragglers.md) with real ddprun agents, on every backend.

    test_straggler.py DDPRUN DDP_RENDEZVOUS [TestClass]

A pair of agents (two workers each) whose workers beat a step every 0.15 s, rank 3 3x as long
in the slow cases. BackendTests, run by each backend's class:
- flagged: a `straggler` event for rank 3 in its node's event log only (join order, or the
  node rank, decides which node holds ranks 2..3), and the job's status (`ddprun status` and
  its --json) names it: 1 straggler, rank 3;
- --exclude-straggler (--nnodes 1:2): rank 3's node is removed (its agent exits, its event log
  says why) and the other goes on alone in a later round.
The classes:
- StragglerTest: a c10d pair on loopback (127.0.0.2, .3) on a standalone daemon with a status
  port (also /api/jobs and /metrics); plus a balanced job (none flagged), one node (the
  in-process rendezvous, 4 workers), and a spare replacing an excluded straggler (a job at
  MAX = 2 nodes and a third agent waiting as a spare: the slow node is removed, the spare takes
  its group rank and global ranks, the other node keeps its own, the job ends 0).
- NetnsStragglerTest: a c10d pair in two network namespaces, the first hosting the rendezvous
  (skipped without root/netns).
- EtcdStragglerTest: an etcd pair on a real etcd (skipped where etcd is not installed); also
  the elected host's node removed (the other is elected and goes on alone).
- StaticStragglerTest: a static pair (node ranks 0 and 1); --exclude-straggler is refused
  there (exit 2, one line naming the fix: a static job has no spares and cannot shrink).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
sys.path.insert(0, os.path.join(HERE, "..", "status"))
import etcd  # noqa: E402
import netns  # noqa: E402
import statuslib  # noqa: E402
from agents import assert_usage_error  # noqa: E402
from procs import OutputProcess, free_port, wait_for  # noqa: E402

DDPRUN = DAEMON = None
WORKER = os.path.join(HERE, "straggler_worker.py")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60
CONF = "last_call_timeout=0.2,join_timeout=20"
REPORTS = ["--straggler-reports", "3"]
RUN_ID = "strag"


def events(path, kind):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [e for e in (json.loads(line) for line in f if line.startswith("{"))
                if e["event"] == kind]


class Case(unittest.TestCase):
    """Agents of one job (run id `strag`) in a temporary directory; a backend's class says how
    agent i reaches the rendezvous (backend_args), where it runs (ADDRS, prefix) and where the
    job's status port is (status_at)."""
    ADDRS = ("127.0.0.2", "127.0.0.3")

    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_straggler_")
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
        self.tmpdir.cleanup()

    def backend_args(self, i, nnodes):
        raise NotImplementedError

    def prefix(self, i):
        return []

    def started_first(self, agent):
        """Called once the first agent of a pair started, before the second starts."""

    def status_at(self):
        """(argv prefix, HOST:PORT) of the job's status port, or None."""
        return None

    def agent_argv(self, i, args, nnodes="2", addr=None):
        return self.prefix(i) + [
            DDPRUN, "--nproc-per-node", "2", "--shutdown-timeout", "5", "--python", PYTHON,
            "--rdzv-id", RUN_ID, "--local-addr", addr or self.ADDRS[i]] + self.backend_args(
                i, nnodes) + args + [WORKER]

    def spawn(self, name, argv, env_extra=None):
        env = dict(os.environ, MARK_DIR=self.marks, **(env_extra or {}))
        p = OutputProcess(self.tmp, name, argv, env, timeout=DEADLINE_S)
        self.procs.append(p)
        return p

    def pair(self, args, slow_rank=None, nnodes="2", env_extra=None):
        """The two agents (self.procs[0..1]); returns their event log paths."""
        logs = []
        env = dict(env_extra or {})
        if slow_rank is not None:
            env["SLOW_RANK"] = str(slow_rank)
        for i, name in enumerate("ab"):
            logs.append(os.path.join(self.tmp, name + ".jsonl"))
            agent = self.spawn(name, self.agent_argv(i, ["--event-log", logs[-1]] + args, nnodes),
                               env)
            if i == 0:
                self.started_first(agent)
        return logs

    def slow_node(self, logs):
        """The index of the node whose first round holds ranks 2..3."""
        wait_for(lambda: all(events(log, "round") for log in logs), 40, "both nodes' rounds")
        offsets = [events(log, "round")[0]["rank_offset"] for log in logs]
        self.assertEqual(sorted(offsets), [0, 2])
        return offsets.index(2)

    def stop_workers(self):
        with open(os.path.join(self.marks, "stop"), "w"):
            pass

    def ddprun_status(self, *args):
        """`ddprun status HOST:PORT strag ARGS` where the status port is: its stdout."""
        prefix, endpoint = self.status_at()
        r = subprocess.run(prefix + [DDPRUN, "status", endpoint, RUN_ID] + list(args),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def check_status(self):
        """The job's status, where it has a status port: rank 3 the one straggler, in the JSON
        and in `ddprun status`'s STRAGGLERS column. Returns the JSON's job (None: no port)."""
        if self.status_at() is None:
            return None
        j = json.loads(self.ddprun_status("--json"))["job"]
        self.assertEqual(j["stragglers"], 1)
        self.assertEqual([r["rank"] for r in j["straggler_ranks"]], [3])
        self.assertGreater(j["straggler_ranks"][0]["step_seconds"], 2 * j["median_step_seconds"])
        self.assertRegex(self.ddprun_status(), r"GOODPUT +STRAGGLERS +LAST FAILURE\n%s +running "
                         r"+.*%% +1 \(rank 3 [0-9.]+s; median [0-9.]+s\) +-\n" % RUN_ID)
        return j


class BackendTests(Case):
    """What every backend's pair must show; a backend's class adds how to reach it."""

    def test_a_rank_3x_slower_is_flagged(self):
        logs = self.pair(REPORTS, slow_rank=3)
        slow = self.slow_node(logs)
        slow_log, fast_log = logs[slow], logs[1 - slow]
        wait_for(lambda: events(slow_log, "straggler"), 40, "a straggler event on rank 3's node")
        flagged = events(slow_log, "straggler")[0]
        self.assertEqual(flagged["rank"], 3)
        self.assertFalse(flagged["removed"])
        self.assertGreater(flagged["step_time_seconds"], 2 * flagged["median_seconds"])
        self.check_status()
        self.stop_workers()
        for p in self.procs:
            self.assertEqual(p.wait(), 0, p.stderr())
        self.assertEqual(events(fast_log, "straggler"), [])
        self.assertEqual(len(events(slow_log, "straggler")), 1)  # flagged once

    def test_exclude_straggler_removes_the_slow_node(self):
        logs = self.pair(REPORTS + ["--exclude-straggler"], slow_rank=3, nnodes="1:2")
        slow = self.slow_node(logs)
        slow_log, fast_log = logs[slow], logs[1 - slow]
        slow_agent, fast_agent = self.procs[slow], self.procs[1 - slow]
        self.assertNotEqual(slow_agent.wait(), 0, slow_agent.stderr())
        self.assertIn("persistent straggler", slow_agent.stderr())
        self.assertTrue(events(slow_log, "straggler")[0]["removed"])
        self.assertIn("persistent straggler", events(slow_log, "lost")[0]["reason"])
        wait_for(lambda: [r for r in events(fast_log, "round") if r["world_size"] == 2], 40,
                 "the other node to go on alone")
        self.assertEqual(events(fast_log, "round")[-1]["rank_offset"], 0)
        self.stop_workers()
        self.assertEqual(fast_agent.wait(), 0, fast_agent.stderr())
        self.assertEqual(events(fast_log, "straggler"), [])


class StragglerTest(BackendTests):
    """A c10d pair on loopback on a standalone daemon with a status port."""

    def setUp(self):
        super().setUp()
        self.daemon = statuslib.Daemon(self.tmp, DAEMON)
        self.addCleanup(self.daemon.stop)

    def backend_args(self, i, nnodes):
        return ["--nnodes", nnodes, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                "127.0.0.1:%d" % self.daemon.port, "--rdzv-conf", CONF + ",is_host=false"]

    def status_at(self):
        return [], "127.0.0.1:%d" % self.daemon.status_port

    def job(self):
        return statuslib.jobs(self.daemon.status_port).get(RUN_ID)

    def check_status(self):
        j = super().check_status()
        self.assertEqual(statuslib.jobs(self.daemon.status_port)[RUN_ID]["stragglers"], 1)
        self.assertGreater(j["median_step_seconds"], 0.1)
        m = statuslib.metrics(self.daemon.status_port)
        self.assertNotIn(("ddp_rdzv_rank_step_seconds", '{run_id="strag",rank="0"}'), m)
        self.assertEqual(m[("ddp_rdzv_job_stragglers", '{run_id="strag"}')], 1)
        self.assertGreater(m[("ddp_rdzv_rank_step_seconds", '{run_id="strag",rank="3"}')], 0.3)
        return j

    def test_one_node(self):
        log = os.path.join(self.tmp, "one.jsonl")
        agent = self.spawn("one", [DDPRUN, "--nproc-per-node", "4", "--python", PYTHON,
                                   "--event-log", log] + REPORTS + [WORKER], {"SLOW_RANK": "3"})
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
        self.assertEqual(j["straggler_ranks"], [])
        self.assertGreater(j["median_step_seconds"], 0.1)
        self.assertRegex(self.ddprun_status(), r"\n%s +running +.*%% +0 +-\n" % RUN_ID)
        self.stop_workers()
        for p in self.procs:
            self.assertEqual(p.wait(), 0, p.stderr())
        self.assertEqual(events(a_log, "straggler") + events(b_log, "straggler"), [])

    def test_a_spare_replaces_an_excluded_straggler(self):
        # Rank 3 turns slow only once the spare waits (the mark "slow"): flagged before, its
        # node's removal would leave the job below MIN = 2 and end it. The spare's own workers
        # are not slow (no SLOW_RANK in its environment).
        logs = self.pair(REPORTS + ["--exclude-straggler"], slow_rank=3,
                         env_extra={"SLOW_AFTER_MARK": "1"})
        slow = self.slow_node(logs)
        slow_agent, fast_agent = self.procs[slow], self.procs[1 - slow]
        spare_log = os.path.join(self.tmp, "c.jsonl")
        spare = self.spawn("c", self.agent_argv(0, ["--event-log", spare_log] + REPORTS +
                                                ["--exclude-straggler"], addr="127.0.0.4"))
        wait_for(lambda: any(n["role"] == "spare" for n in self.job()["nodes"]), 30,
                 "the third agent to wait as a spare")
        self.assertEqual(events(spare_log, "round"), [], "a spare runs no workers")
        with open(os.path.join(self.marks, "slow"), "w"):
            pass
        self.assertNotEqual(slow_agent.wait(), 0, slow_agent.stderr())
        self.assertIn("persistent straggler", slow_agent.stderr())
        self.assertTrue(events(logs[slow], "straggler")[0]["removed"])
        wait_for(lambda: events(spare_log, "round"), 30, "the spare's first round")
        first = {i: events(logs[i], "round")[0] for i in (0, 1)}
        took = events(spare_log, "round")[0]
        self.assertEqual((took["group_rank"], took["rank_offset"], took["world_size"]),
                         (first[slow]["group_rank"], 2, 4), "the spare took the slow node's ranks")
        wait_for(lambda: len(events(logs[1 - slow], "round")) == 2, 30, "the other node's round 2")
        kept = events(logs[1 - slow], "round")[1]
        self.assertEqual((kept["group_rank"], kept["rank_offset"], kept["world_size"]),
                         (first[1 - slow]["group_rank"], 0, 4), "the other node kept its ranks")
        self.assertEqual((took["restart_count"], kept["restart_count"]), (0, 0),
                         "a removed node uses no restart")
        self.stop_workers()
        for agent in (fast_agent, spare):
            self.assertEqual(agent.wait(), 0, agent.stderr())
        self.assertEqual(events(spare_log, "straggler") + events(logs[1 - slow], "straggler"), [])


class NetnsStragglerTest(BackendTests):
    """A c10d pair in two network namespaces; the first agent hosts the rendezvous and its
    status port (read from inside its namespace)."""

    def setUp(self):
        self.hosts = netns.two_hosts_for(self, "dt", ["10.233.8.2", "10.233.8.3"])
        super().setUp()
        self.ADDRS = tuple(self.hosts.addrs)
        self.status_port = free_port()

    def prefix(self, i):
        return self.hosts.exec_prefix(i)

    def backend_args(self, i, nnodes):
        return ["--nnodes", nnodes, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                "%s:29412" % self.ADDRS[0], "--rdzv-conf", CONF,
                "--status-port", str(self.status_port)]

    def started_first(self, agent):
        wait_for(lambda: "hosting the rendezvous" in agent.stderr(), 20,
                 "the first agent to host the rendezvous")

    def status_at(self):
        return self.prefix(0), "%s:%d" % (self.ADDRS[0], self.status_port)


class EtcdStragglerTest(BackendTests):
    """An etcd pair on loopback; the agent etcd elects hosts the rendezvous and its status
    port."""

    def setUp(self):
        try:
            self.etcd = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(self.etcd.stop)  # after tearDown: the agents go first
        super().setUp()
        self.status_port = free_port()

    def backend_args(self, i, nnodes):
        return ["--nnodes", nnodes, "--rdzv-backend", "etcd", "--rdzv-endpoint",
                self.etcd.endpoints(), "--rdzv-conf", CONF + ",lease_ttl=2",
                "--status-port", str(self.status_port)]

    def status_at(self):
        wait_for(lambda: any("hosting the rendezvous" in p.stderr() for p in self.procs), 10,
                 "an agent elected to host")
        host = next(i for i, p in enumerate(self.procs) if "hosting the rendezvous" in p.stderr())
        return [], "%s:%d" % (self.ADDRS[host], self.status_port)

    def test_exclude_straggler_removes_the_hosting_node(self):
        # The elected host's node is the slow one (both its ranks 3x slower than the other
        # node's): its daemon goes with it, the other node is elected and goes on alone.
        logs = [os.path.join(self.tmp, name + ".jsonl") for name in "ab"]
        args = REPORTS + ["--exclude-straggler"]
        host = self.spawn("a", self.agent_argv(0, ["--event-log", logs[0]] + args, "1:2"),
                          {"SLOW_RANK": "all"})
        wait_for(lambda: "hosting the rendezvous" in host.stderr(), 20, "a to be elected")
        other = self.spawn("b", self.agent_argv(1, ["--event-log", logs[1]] + args, "1:2"))
        self.assertNotEqual(host.wait(), 0, host.stderr())
        self.assertIn("persistent straggler", host.stderr())
        self.assertTrue(events(logs[0], "straggler")[0]["removed"])
        self.assertEqual(events(logs[1], "round")[0]["world_size"], 4)  # b ran beside a
        wait_for(lambda: "hosting the rendezvous" in other.stderr(), 30, "b to be elected")
        wait_for(lambda: [r for r in events(logs[1], "round") if r["world_size"] == 2], 40,
                 "b to go on alone")
        self.stop_workers()
        self.assertEqual(other.wait(), 0, other.stderr())
        self.assertEqual(events(logs[1], "straggler"), [])


class StaticStragglerTest(BackendTests):
    """A static pair: node rank 0 (ranks 0..1) hosts the rendezvous and its status port, node
    rank 1 holds ranks 2..3."""

    def setUp(self):
        super().setUp()
        self.master_port = free_port(self.ADDRS[0])
        self.status_port = free_port()

    def backend_args(self, i, nnodes):
        return ["--nnodes", nnodes, "--rdzv-backend", "static", "--node-rank", str(i),
                "--master-addr", self.ADDRS[0], "--master-port", str(self.master_port),
                "--rdzv-conf", "join_timeout=20", "--status-port", str(self.status_port)]

    def status_at(self):
        return [], "%s:%d" % (self.ADDRS[0], self.status_port)

    # No spare can join a static job and it cannot shrink: removing a node would end it.
    test_exclude_straggler_removes_the_slow_node = None  # not a test here: refused instead

    def test_exclude_straggler_is_refused(self):
        for i in (0, 1):
            assert_usage_error(self, self.agent_argv(i, ["--exclude-straggler"]),
                               ["--exclude-straggler", "static", "--rdzv-backend c10d"])
        self.assertEqual(os.listdir(self.marks), [], "no worker started")


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    DAEMON = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
