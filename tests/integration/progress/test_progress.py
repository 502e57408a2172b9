"""Progress-aware restarts (docs/progress.md) and goodput (docs/goodput.md) with real ddprun
agents on loopback.

    test_progress.py DDPRUN DDP_RENDEZVOUS [TestClass]

NoProgressTest: a worker that always dies before its first heartbeat: with
--max-no-progress-restarts 2 the job stops after 2 restarts, with the no-requeue exit code (93,
or --no-progress-exit-code), though --max-restarts would allow more; one node and a c10d pair
(NoProgressNetnsTest: a pair in network namespaces; NoProgressEtcdTest: an etcd pair).
GoodputTest: workers beat steps for a known time, fail, restart, beat again and succeed; the
goodput of one node's event log (GoodputStatusTest: /api/jobs, /metrics and `ddprun status` of a
c10d pair on a standalone daemon; GoodputNetnsTest: the event logs of a pair in network
namespaces; GoodputEtcdTest: of an etcd pair) is within 5 % of the schedule the workers recorded.
The namespace and etcd classes are apart so that their skips hide no test that ran.
"""
import datetime
import json
import os
import re
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
from procs import OutputProcess, free_port, wait_for  # noqa: E402

DDPRUN = DAEMON = None
WORKER = os.path.join(HERE, "progress_worker.py")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60
CONF = "last_call_timeout=0.2,join_timeout=20"


def events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def iso_seconds(text):
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


class Case(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_progress_")
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
        self.tmpdir.cleanup()

    def agent(self, name, mode, args, nproc=1, prefix=()):
        env = dict(os.environ, MODE=mode, MARK_DIR=self.marks)
        argv = list(prefix) + [DDPRUN, "--nproc-per-node", str(nproc), "--shutdown-timeout", "5",
                               "--python", PYTHON] + args + [WORKER]
        p = OutputProcess(self.tmp, name, argv, env, timeout=DEADLINE_S)
        self.procs.append(p)
        return p

    def pair(self, mode, endpoint, extra, hosted=True, backend="c10d",
             addrs=("127.0.0.2", "127.0.0.3"), prefixes=((), ())):
        """Two agents (at `addrs`, two workers each) of one job at `endpoint`; with
        `hosted` (c10d), the first one hosts the rendezvous (the second starts once it does)."""
        agents = []
        for name, addr, prefix in zip("ab", addrs, prefixes):
            agents.append(self.agent(name, mode, ["--nnodes", "2", "--rdzv-backend", backend,
                                                  "--rdzv-endpoint", endpoint, "--rdzv-id",
                                                  "progress", "--local-addr", addr] + extra,
                                     nproc=2, prefix=prefix))
            if hosted and backend == "c10d" and name == "a":
                wait_for(lambda: "hosting the rendezvous" in agents[0].stderr(), 20,
                         "the first agent to host the rendezvous")
        return agents

    def stepping(self, nodes):
        """The schedule as the workers recorded it: per attempt, the longest of any node's time
        from its first step beat to its last (`nodes`: rank -> node), summed."""
        per_attempt = {}
        for name in os.listdir(self.marks):
            if not name.startswith("beats.") or name.endswith(".tmp"):
                continue
            _, attempt, rank = name.split(".")
            with open(os.path.join(self.marks, name)) as f:
                r = json.load(f)
            node = per_attempt.setdefault(int(attempt), {}).setdefault(nodes(int(rank)), [])
            node.append(r)
        self.assertEqual(sorted(per_attempt), [0, 1])
        return sum(max(max(r["last"] for r in recs) - min(r["first"] for r in recs)
                       for recs in attempt.values())
                   for attempt in per_attempt.values())


NO_PROGRESS_ARGS = ["--max-restarts", "10", "--max-no-progress-restarts", "2"]


class NoProgressTest(Case):
    ARGS = NO_PROGRESS_ARGS

    def check_stopped(self, agent, code, rounds):
        self.assertEqual(agent.wait(), code, agent.stderr())
        self.assertIn("no new step in the last 3 rounds", agent.stderr())
        self.assertIn("do not requeue", agent.stderr())
        log = events(rounds)
        self.assertEqual([e["round"] for e in log if e["event"] == "round"], [1, 2, 3])
        self.assertEqual((log[-1]["event"], log[-1]["exit_code"]), ("finish", code))

    def test_a_worker_dying_before_its_first_beat_stops_after_2_restarts(self):
        ev = os.path.join(self.tmp, "ev.jsonl")
        a = self.agent("one", "die", self.ARGS + ["--event-log", ev], nproc=2)
        self.check_stopped(a, 93, ev)

    def test_the_exit_code_is_an_option(self):
        ev = os.path.join(self.tmp, "ev.jsonl")
        a = self.agent("one", "die", self.ARGS + ["--no-progress-exit-code", "42",
                                                  "--event-log", ev])
        self.check_stopped(a, 42, ev)

    def test_off_by_default(self):
        a = self.agent("one", "die", ["--max-restarts", "3"])
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertEqual(len(re.findall(r"restarting the worker group", a.stderr())), 3)

    def test_both_nodes_of_a_c10d_job_exit_with_the_code(self):
        endpoint = "127.0.0.1:%d" % free_port()
        for name, agent in zip("ab", self.pair("die", endpoint,
                                               self.ARGS + ["--rdzv-conf", CONF])):
            self.assertEqual(agent.wait(), 93, name + ": " + agent.stderr())
            self.assertIn("do not requeue", agent.stderr())


class NoProgressNetnsTest(Case):
    """Apart from NoProgressTest: it is Skipped without root and network namespaces."""
    ARGS = NO_PROGRESS_ARGS

    def test_both_nodes_in_network_namespaces_exit_with_the_code(self):
        hosts = netns.two_hosts_for(self, "dp", ["10.233.6.2", "10.233.6.3"])
        endpoint = "%s:%d" % (hosts.addrs[0], free_port())
        agents = self.pair("die", endpoint, self.ARGS + ["--rdzv-conf", CONF],
                           addrs=hosts.addrs, prefixes=[hosts.exec_prefix(i) for i in (0, 1)])
        for name, agent in zip("ab", agents):
            self.assertEqual(agent.wait(), 93, name + ": " + agent.stderr())
            self.assertIn("do not requeue", agent.stderr())


class NoProgressEtcdTest(Case):
    """Apart from NoProgressTest: it is Skipped where etcd is not installed."""
    ARGS = NO_PROGRESS_ARGS

    def test_both_nodes_of_an_etcd_job_exit_with_the_code(self):
        try:
            cluster = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(cluster.stop)
        for name, agent in zip("ab", self.pair("die", cluster.endpoints(), self.ARGS + [
                "--rdzv-conf", CONF + ",lease_ttl=2"], backend="etcd")):
            self.assertEqual(agent.wait(), 93, name + ": " + agent.stderr())
            self.assertIn("do not requeue", agent.stderr())


class GoodputTest(Case):
    def test_the_event_log_of_one_node(self):
        ev = os.path.join(self.tmp, "ev.jsonl")
        a = self.agent("one", "schedule", ["--max-restarts", "1", "--event-log", ev])
        self.assertEqual(a.wait(), 0, a.stderr())
        log = events(ev)
        fin = log[-1]
        self.assertEqual(fin["event"], "finish")
        wall = fin["ts_unix"] - log[0]["ts_unix"]  # from the join to the end
        stepping = self.stepping(lambda rank: 0)
        expected = stepping / wall
        print("goodput %.4f, schedule %.4f (%.2f s of %.2f s)" % (fin["goodput"], expected,
                                                                 stepping, wall), file=sys.stderr)
        self.assertAlmostEqual(fin["goodput"], expected, delta=0.05 * expected)
        self.assertAlmostEqual(fin["stepping_seconds"], stepping, delta=0.05 * stepping)
        self.assertAlmostEqual(fin["wall_seconds"], wall, delta=0.05 * wall)


class GoodputNetnsTest(Case):
    """Apart from GoodputTest: it is Skipped without root and network namespaces."""

    def test_a_pair_in_network_namespaces(self):
        # Progress reports crossing hosts: each node's event log ends with the job's goodput.
        hosts = netns.two_hosts_for(self, "dg", ["10.233.7.2", "10.233.7.3"])
        logs = [os.path.join(self.tmp, "ev.%s.jsonl" % n) for n in "ab"]
        agents = []
        for i, name in enumerate("ab"):
            agents.append(self.agent(name, "schedule", [
                "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                "%s:29411" % hosts.addrs[0], "--rdzv-id", "progress", "--local-addr",
                hosts.addrs[i], "--max-restarts", "1", "--rdzv-conf", CONF, "--event-log",
                logs[i]], nproc=2, prefix=hosts.exec_prefix(i)))
            if i == 0:
                wait_for(lambda: "hosting the rendezvous" in agents[0].stderr(), 20,
                         "the first agent to host the rendezvous")
        for agent in agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        first, fin = events(logs[0])[0], events(logs[0])[-1]
        wall = fin["ts_unix"] - first["ts_unix"]
        expected = self.stepping(lambda rank: rank // 2) / wall
        for log in logs:
            got = events(log)[-1]["goodput"]
            print("goodput %.4f, schedule %.4f" % (got, expected), file=sys.stderr)
            self.assertAlmostEqual(got, expected, delta=0.05 * expected)


class GoodputEtcdTest(Case):
    """Apart from GoodputTest: it is Skipped where etcd is not installed."""

    def test_an_etcd_pair(self):
        # The job on the daemon an etcd election placed: each node's event log ends with it.
        try:
            cluster = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(cluster.stop)
        logs = [os.path.join(self.tmp, "ev.%s.jsonl" % n) for n in "ab"]
        agents = [self.agent(name, "schedule", [
            "--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", cluster.endpoints(),
            "--rdzv-id", "progress", "--local-addr", addr, "--max-restarts", "1",
            "--rdzv-conf", CONF + ",lease_ttl=2", "--event-log", log], nproc=2)
            for name, addr, log in zip("ab", ("127.0.0.2", "127.0.0.3"), logs)]
        for agent in agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        ends = [events(log) for log in logs]
        wall = max(e[-1]["ts_unix"] for e in ends) - min(e[0]["ts_unix"] for e in ends)
        expected = self.stepping(lambda rank: rank // 2) / wall
        for e in ends:
            print("goodput %.4f, schedule %.4f" % (e[-1]["goodput"], expected), file=sys.stderr)
            self.assertAlmostEqual(e[-1]["goodput"], expected, delta=0.05 * expected)


class GoodputStatusTest(Case):
    def test_the_status_port_of_a_c10d_pair(self):
        daemon = statuslib.Daemon(self.tmp, DAEMON, ["--require-secret"])
        self.addCleanup(daemon.stop)
        secret = os.path.join(self.tmp, "secret")  # progress reports go in AUTH_FRAMEs
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("progress-test-secret-0123456789abcdef\n")
        agents = self.pair("schedule", "127.0.0.1:%d" % daemon.port,
                           ["--max-restarts", "1", "--rdzv-conf",
                            CONF + ",is_host=false,secret_file=" + secret], hosted=False)
        for agent in agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        j = statuslib.jobs(daemon.status_port)["progress"]
        self.assertEqual(j["state"], "finished")
        wall = iso_seconds(j["finished_at"]) - iso_seconds(j["created_at"])
        stepping = self.stepping(lambda rank: rank // 2)
        expected = stepping / wall
        print("goodput %.4f, schedule %.4f (%.2f s of %.2f s)" % (j["goodput"], expected,
                                                                 stepping, wall), file=sys.stderr)
        self.assertAlmostEqual(j["goodput"], expected, delta=0.05 * expected)
        self.assertAlmostEqual(j["stepping_seconds"], stepping, delta=0.05 * stepping)
        self.assertGreaterEqual(j["best_step"], 1001)  # the second attempt's steps
        m = statuslib.metrics(daemon.status_port)
        label = '{run_id="progress"}'
        self.assertAlmostEqual(m[("ddp_rdzv_job_goodput_ratio", label)], j["goodput"], places=6)
        self.assertAlmostEqual(m[("ddp_rdzv_job_stepping_seconds", label)], j["stepping_seconds"],
                               places=3)
        r = subprocess.run([DDPRUN, "status", "127.0.0.1:%d" % daemon.status_port],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"GOODPUT")
        self.assertIn("%.1f%%" % (100 * j["goodput"]), r.stdout)


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    DAEMON = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
