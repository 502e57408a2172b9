"""The launching ddprun's fan-out with --launcher pbs, through fake_bin/pbsdsh, a STAND-IN for
PBS Pro's pbsdsh (no PBS server exists in Debian): `-n I -- CMD` runs CMD here, in $HOME, and
exits 0 whatever the task did, as PBS Pro's does; the nodes of PBS_NODEFILE are this host and
127.0.0.3. PbsTest: the c10d job the launcher's daemon hosts (exit code, event log, secret,
SIGINT, status port); PbsEtcdTest: the same with --rdzv-backend etcd (skipped where etcd is
not installed).

usage: test_fanout_pbs.py DDPRUN [TestClass[.test]]
"""
import glob
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys

import fanout_case
from fanout_case import HERE, FanoutCase, all_cmdlines
import etcd  # noqa: E402  (fanout_case put testlib on the path)
from procs import free_port, wait_for  # noqa: E402

WAITING_WORKER = os.path.join(HERE, "waiting_worker.py")


class PbsTest(FanoutCase):
    BACKEND = "c10d"  # what the agents' event log names

    def setUp(self):
        super().setUp()
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        self.host = socket.gethostname()
        self.nodefile = os.path.join(self.tmp, "nodefile")
        with open(self.nodefile, "w") as f:
            f.write("%s\n%s\n127.0.0.3\n127.0.0.3\n" % (self.host, self.host))

    def pbs(self, args):
        return self.start(["--launcher", "pbs", "--nproc-per-node", "2", "--shutdown-timeout", "5",
                           "--rdzv-conf", "last_call_timeout=0.2,keep_alive_interval=0.5"] + args,
                          PBS_JOBID="77.pbs-server", PBS_NODEFILE=self.nodefile, HOME=self.home,
                          PATH=os.path.join(HERE, "fake_bin") + ":" + os.environ["PATH"])

    def test_one_agent_per_node_and_the_jobs_exit_code(self):
        # Rank 3 fails with 5 once every rank has printed (it polls their marks).
        launcher = self.pbs(["--no-python", "/bin/sh", "-c",
                             'echo "rank $RANK of $WORLD_SIZE in $(pwd -P)"; '
                             'touch "$MARK_DIR/printed.$RANK"; [ "$RANK" = 3 ] || exit 0; '
                             'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 4 ]; do '
                             'sleep 0.05; done; exit 5'])
        code = launcher.wait(60)
        out, err = launcher.stdout(), launcher.stderr()
        self.assertEqual(code, 5, err + out)  # the stand-in pbsdsh exits 0 regardless
        ranks = re.findall(r"^\[(\S+)\] \[default\d\]:rank (\d) of 4 in (.*)$", out, re.M)
        self.assertEqual(sorted(int(r) for _, r, _ in ranks), [0, 1, 2, 3], out)
        self.assertEqual({h for h, _, _ in ranks}, {self.host, "127.0.0.3"})
        self.assertEqual({d for _, _, d in ranks}, {os.path.realpath(self.tmp)})
        self.assertIn("task on node 2 exited", err)  # PBS Pro's -n: the first line of a host
        self.assert_nothing_left()

    def test_success_is_zero(self):
        launcher = self.pbs(["--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())

    def test_every_nodes_agent_appends_to_the_event_log(self):
        # --event-log reaches each node's agent as given; a relative path is relative to the
        # directory the agents start in (the launcher's); here both "nodes" share one file.
        launcher = self.pbs(["--event-log", "events.jsonl", "--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())
        with open(os.path.join(self.tmp, "events.jsonl")) as f:
            events = [json.loads(line) for line in f.read().splitlines()]  # whole lines only
        by_agent = {}
        for e in events:
            by_agent.setdefault(e["agent_pid"], []).append(e)
        self.assertEqual(len(by_agent), 2, events)  # the launcher itself writes none
        group_ranks = set()
        for lines in by_agent.values():
            self.assertEqual(lines[0]["event"], "join")
            self.assertEqual(lines[0]["backend"], self.BACKEND)
            self.assertEqual((lines[0]["min_nodes"], lines[0]["max_nodes"]), (2, 2))
            self.assertEqual(lines[-1]["event"], "finish")
            self.assertEqual(lines[-1]["exit_code"], 0)
            started = [e for e in lines if e["event"] == "workers_started"]
            self.assertEqual(len(started), 1)
            self.assertEqual(len(started[0]["workers"]), 2)
            group_ranks.add(lines[-1]["group_rank"])
        self.assertEqual(group_ranks, {0, 1})
        self.assertEqual(len({e["run_id"] for e in events}), 1)

    def test_each_job_gets_a_fresh_owner_only_secret_never_in_argv(self):
        secrets = []
        for _ in range(2):
            for name in os.listdir(self.marks):
                os.unlink(os.path.join(self.marks, name))
            launcher = self.pbs([WAITING_WORKER])
            wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                     launcher.proc.poll() is not None, 60, "4 waiting workers")
            self.assertIsNone(launcher.proc.poll(), launcher.stderr())
            files = glob.glob(os.path.join(self.tmp, ".ddprun-secret-*"))
            self.assertEqual(len(files), 1, files)
            self.assertEqual(os.stat(files[0]).st_mode & 0o077, 0)
            with open(files[0]) as f:
                secret = f.read().strip()
            self.assertRegex(secret, r"^[0-9a-f]{64}$")
            secrets.append(secret)
            for pid, cmd in all_cmdlines():
                self.assertNotIn(secret, cmd, "%d %s" % (pid, cmd))
            launcher.proc.send_signal(signal.SIGINT)
            self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
            self.assertFalse(os.path.exists(files[0]))  # removed with the launcher
            self.assert_nothing_left()
        self.assertNotEqual(secrets[0], secrets[1])

    def test_sigint_stops_every_pbsdsh_agent(self):
        launcher = self.pbs([WAITING_WORKER])
        wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                 launcher.proc.poll() is not None, 60, "4 waiting workers")
        self.assertIsNone(launcher.proc.poll(), launcher.stderr())
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()

    def test_the_launchers_daemon_serves_the_status_port(self):
        # --status-port on the launching ddprun: its daemon (the job's rendezvous) serves it.
        port = free_port()
        launcher = self.pbs(["--status-port", str(port), WAITING_WORKER])
        wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                 launcher.proc.poll() is not None, 60, "4 waiting workers")
        self.assertIsNone(launcher.proc.poll(), launcher.stderr())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/jobs")
        reply = conn.getresponse()
        self.assertEqual(reply.status, 200)
        jobs = {j["run_id"]: j for j in json.loads(reply.read())["jobs"]}
        conn.close()
        job = jobs["77.pbs-server"]
        self.assertEqual((job["state"], job["node_count"], job["world_size"]), ("running", 2, 4))
        self.assertEqual(sorted(n["group_rank"] for n in job["nodes"]), [0, 1])
        r = subprocess.run([fanout_case.DDPRUN, "status", "127.0.0.1:%d" % port],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("77.pbs-server", r.stdout)
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()


class PbsEtcdTest(PbsTest):
    """--launcher pbs with --rdzv-backend etcd: the agents meet in a real etcd; the launching
    ddprun starts no daemon and takes the job's end from etcd."""

    BACKEND = "etcd"
    # No daemon of the launcher's in an etcd job, so no status port to serve (docs/status.md).
    test_the_launchers_daemon_serves_the_status_port = None

    def setUp(self):
        super().setUp()
        try:
            self.store = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(self.store.stop)

    def pbs(self, args):
        return self.start(["--launcher", "pbs", "--nproc-per-node", "2", "--shutdown-timeout", "5",
                           "--rdzv-backend", "etcd", "--rdzv-endpoint", self.store.endpoints(),
                           "--rdzv-conf", "last_call_timeout=0.2,lease_ttl=2"] + args,
                          PBS_JOBID="78.pbs-server", PBS_NODEFILE=self.nodefile, HOME=self.home,
                          PATH=os.path.join(HERE, "fake_bin") + ":" + os.environ["PATH"])

    def test_each_job_gets_a_fresh_owner_only_secret_never_in_argv(self):
        # An etcd job has no daemon of the launcher's to prove anything to: no secret file.
        launcher = self.pbs(["--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())
        self.assertEqual(glob.glob(os.path.join(self.tmp, ".ddprun-secret-*")), [])

    def test_one_agent_per_node_and_the_jobs_exit_code(self):
        super().test_one_agent_per_node_and_the_jobs_exit_code()
        err = self.launchers[-1].stderr()
        self.assertIn("rendezvous through etcd " + self.store.endpoints(), err)
        self.assertNotIn("rendezvous on", err)  # no daemon on the launching host
        for host in (self.host, "127.0.0.3"):
            self.assertRegex(err, r"\[%s\] .*joined job 78.pbs-server for round"
                             % re.escape(host))
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        self.assertIn("/ddprun/78.pbs-server/finished", self.store.keys("/ddprun/78.pbs-server/"))


if __name__ == "__main__":
    fanout_case.DDPRUN = os.path.abspath(sys.argv[1])
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
