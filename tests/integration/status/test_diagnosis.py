"""One place to read a failure (docs/diagnosis.md), with real processes.

    test_diagnosis.py DDPRUN [TestClass]

A 2-node c10d job on loopback whose first agent hosts the rendezvous with --status-port; a
worker of the other node prints 61 lines and exits 7. The hosting node's status port
(/api/jobs/<id> and `ddprun status HOST:PORT RUN_ID`) shows that rank's last 40 lines;
without restarts, every node's final root-cause report ends with them. A Python worker that
stalls (--hang-timeout) arrives there with the head of its stack file.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import statuslib  # noqa: E402
import netns  # noqa: E402
from procs import OutputProcess, free_port, wait_for  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "diag_worker.sh")
HANG_WORKER = os.path.join(HERE, "diag_hang_worker.py")


def expected_lines(rank):
    """The failing worker's last 40 lines: 21 of its 60 numbered ones dropped."""
    return (["diag line %d of rank %d" % (i, rank) for i in range(22, 61)] +
            ["ValueError: the last words of rank %d" % rank])


class DiagnosisCase(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory()
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.makedirs(self.marks)
        self.agents = []
        self.hosts = None  # netns.TwoHosts, else loopback addresses

    def tearDown(self):
        for a in self.agents:
            a.kill()
        self.tmpdir.cleanup()

    def start(self, max_restarts, worker=WORKER, extra=()):
        """Two agents; the first hosts the rendezvous and its status port, the second's local
        rank 1 fails."""
        rdzv_port, self.status_port = free_port(), free_port()
        conf = statuslib.FAST_CONF.replace(",is_host=false", "")
        addrs = self.hosts.addrs if self.hosts else ["127.0.0.2", "127.0.0.3"]
        self.status_addr = addrs[0] if self.hosts else "127.0.0.1"
        self.agent_addrs = addrs
        for i, addr in enumerate(addrs):
            args = self.prefix(i) + [
                    DDPRUN, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", "%s:%d" % (self.status_addr, rdzv_port), "--rdzv-id", "diag",
                    "--rdzv-conf", conf, "--local-addr", addr, "--shutdown-timeout", "5",
                    "--max-restarts", str(max_restarts)] + list(extra)
            if i == 0:
                args += ["--status-port", str(self.status_port)]
            env = dict(os.environ, MARK_DIR=self.marks, FAIL_HERE=str(i))
            worker_args = [worker] if worker.endswith(".py") else ["--no-python", worker]
            self.agents.append(OutputProcess(self.tmp, "agent%d" % i, args + worker_args, env,
                                             timeout=60))
            if i == 0:
                wait_for(lambda: "hosting the rendezvous" in self.agents[0].stderr(), 20,
                         "the first agent to host the rendezvous")

    def wait_attempt_1(self):
        wait_for(lambda: len([n for n in os.listdir(self.marks) if n.endswith(".1")]) == 4, 30,
                 "4 workers of attempt 1")

    def prefix(self, i):
        return self.hosts.exec_prefix(i) if self.hosts else []

    def status(self, *args):
        """`ddprun status` of the hosting node's status port, run on the other node."""
        r = subprocess.run(self.prefix(1) + [DDPRUN, "status", "%s:%d" % (
            self.status_addr, self.status_port)] + list(args), capture_output=True, text=True,
            timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def job(self):
        """/api/jobs/diag of the hosting node."""
        if self.hosts:  # `--json` prints it as served
            return json.loads(self.status("diag", "--json"))["job"]
        status, _, body = statuslib.get(self.status_port, "/api/jobs/diag")
        self.assertEqual(status, 200, body)
        return json.loads(body)["job"]

    def check_the_failed_rank_s_last_lines(self):
        self.start(max_restarts=1)
        self.wait_attempt_1()  # the restart round runs once the failure was handled
        j = self.job()
        self.assertEqual((j["state"], j["restart_count"]), ("running", 1), j)
        # The failed worker, and (when its stop landed after the report began: scheduling
        # decides, so either is right) its node's other worker that its agent stopped (143).
        count = j["failed_worker_count"]
        self.assertIn(count, (1, 2), j)
        by_local = {f["local_rank"]: f for f in j["failed_workers"]}
        self.assertEqual(by_local[1]["exit_code"], 7, j)
        if count == 2:
            self.assertEqual(by_local[0]["exit_code"], 143, j)
            self.assertEqual(by_local[0]["last_lines"], [])  # it printed nothing
        rank = by_local[1]["rank"]
        self.assertEqual(by_local[1]["last_lines"], expected_lines(rank))
        self.assertEqual(by_local[1]["stack_head"], [])
        self.assertEqual(j["last_failure"]["failure"]["last_lines"], expected_lines(rank))
        # /api/jobs carries the failure's lines too (the page draws them from there).
        listed = json.loads(self.status("--json"))["jobs"][0]
        self.assertEqual(listed["last_failure"]["failure"]["last_lines"], expected_lines(rank))
        self.assertNotIn("failed_workers", listed)

        out = self.status("diag")
        self.assertIn("failed workers of the last failed round (%d shown of %d):\n" % (count, count),
                      out)
        self.assertTrue(by_local[1]["node_key"].startswith(self.agent_addrs[1] + ":"), j)
        self.assertIn("rank %d (local rank 1) on %s: exit code 7" % (
            rank, by_local[1]["node_key"]), out)
        self.assertIn("  last lines of output:\n" +
                      "".join("    %s\n" % line for line in expected_lines(rank)), out)
        open(os.path.join(self.marks, "release"), "w").close()
        for agent in self.agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())


class StatusTest(DiagnosisCase):
    def test_the_hosting_node_shows_the_failed_rank_s_last_lines(self):
        self.check_the_failed_rank_s_last_lines()


class NetnsStatusTest(DiagnosisCase):
    """The same with each node in its own network namespace (skipped without root)."""

    def test_the_hosting_node_shows_the_failed_rank_s_last_lines(self):
        self.hosts = netns.two_hosts_for(self, "dg", ["10.233.7.2", "10.233.7.3"])
        self.check_the_failed_rank_s_last_lines()


class HangTest(DiagnosisCase):
    def test_a_hung_rank_s_stack_head_reaches_the_hosting_node(self):
        self.start(max_restarts=1, worker=HANG_WORKER, extra=["--hang-timeout", "1s"])
        self.wait_attempt_1()
        j = self.job()
        hung = [f for f in j["failed_workers"] if f["exit_code"] == 124]
        self.assertEqual(len(hung), 1, j)
        f = hung[0]
        self.assertEqual(f["local_rank"], 1, f)
        self.assertEqual(f["last_lines"], ["rank %d stalls now" % f["rank"]])
        # faulthandler's dump as the agent wrote it to stack.txt, with source lines added.
        head = "\n".join(f["stack_head"])
        self.assertIn('line 17 in stall_here', head)
        self.assertIn("time.sleep(3600)", head)
        self.assertLessEqual(len(f["stack_head"]), 40)
        self.assertEqual(j["last_failure"]["failure"]["rank"], f["rank"], j)
        open(os.path.join(self.marks, "release"), "w").close()
        for agent in self.agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())


class ReportTest(DiagnosisCase):
    def test_every_node_s_report_ends_with_the_root_cause_s_lines(self):
        self.start(max_restarts=0)
        for agent in self.agents:
            self.assertEqual(agent.wait(), 7, agent.stderr())
        host = self.agents[0].stderr()  # the node where nothing failed
        self.assertIn("Root Cause (first observed failure):", host)
        tail = host[host.index("last lines of rank "):]
        rank = int(tail[len("last lines of rank "):tail.index(":")])
        self.assertEqual(tail.splitlines()[1:41], ["  " + line for line in expected_lines(rank)])
        self.assertNotIn("diag line", self.agents[0].stdout())  # its own workers printed none
        self.assertIn("last lines of rank %d:\n  diag line 22 of rank" % rank,
                      self.agents[1].stderr())


if __name__ == "__main__":
    DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
