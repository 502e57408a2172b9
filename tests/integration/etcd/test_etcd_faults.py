"""The etcd backend when etcd itself fails or is misused: unreachable at start, an outage
shorter than the lease, etcd lost mid-job, the leader of a 3-member cluster killed, a prefix
holding other data, bad --rdzv-conf and endpoints, a lease longer than asked. Real etcd and real ddprun agents on
loopback addresses; skipped (exit 77) where etcd is not installed. Usage:
    test_etcd_faults.py DDPRUN [TestClass]
"""
import os
import signal
import sys
import time

import etcd_case
from etcd_case import EtcdCase
import etcd  # noqa: E402  (etcd_case put testlib on the path)
from procs import free_port, wait_for  # noqa: E402  (etcd_case put testlib on the path)


class EtcdFaultTest(EtcdCase):
    def test_etcd_unreachable_at_start(self):
        dead = "127.0.0.1:%d,127.0.0.1:%d" % (free_port(), free_port())
        start = time.monotonic()
        a = self.start("a", self.A, 1, "ok", endpoints=dead,
                       conf="join_timeout=3,read_timeout=60")
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertLess(time.monotonic() - start, 6)  # the join timeout caps read_timeout
        self.assertIn("cannot reach etcd (%s)" % dead.replace(",", ", "), a.stderr())
        self.assertEqual(self.started(), [])

    def test_a_lease_longer_than_asked_is_named(self):
        # etcd's defaults (election timeout 1 s; later flags win): its smallest lease is 2 s.
        slow = etcd.Cluster(1, extra_args=["--heartbeat-interval=100",
                                           "--election-timeout=1000"])
        try:
            a = self.start("a", self.A, 1, "ok", nnodes="1", endpoints=slow.endpoints(),
                           conf="last_call_timeout=0.2,join_timeout=20,lease_ttl=1")
            self.assertEqual(a.wait(), 0, a.stderr())
        finally:
            slow.stop()
        self.assertIn("etcd granted a lease of 2 s for lease_ttl=1", a.stderr())

    def test_an_etcd_outage_shorter_than_the_lease_is_ridden_out(self):
        conf = "last_call_timeout=0.2,join_timeout=20,lease_ttl=5"
        prog = ["--no-python", "/bin/sleep", "4"]
        a = self.start("a", self.A, 1, "ok", conf=conf, program=prog)
        b = self.start("b", self.B, 1, "ok", conf=conf, program=prog)
        wait_for(lambda: "round 1:" in a.stderr() and "round 1:" in b.stderr(), 20, "round 1")
        self.etcd.kill(0, signal.SIGSTOP)  # etcd frozen: calls and keep-alives hang
        time.sleep(2)  # the point: an outage shorter than the 5 s lease
        self.etcd.kill(0, signal.SIGCONT)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertNotIn("round 2", a.stderr() + b.stderr())  # the workers were never stopped

    def test_etcd_lost_mid_job_stops_the_workers_after_the_lease(self):
        a = self.start("a", self.A, 1, "wait_big", nnodes="1", env_extra={"SMALL": "0"})
        wait_for(lambda: len(self.started()) == 1, 20, "the worker")
        start = time.monotonic()
        self.etcd.kill(0)
        self.assertEqual(a.wait(), 1, a.stderr())
        took = time.monotonic() - start
        self.assertGreater(took, 1.0)  # the workers outlive short outages ...
        self.assertLess(took, 2 + 3)   # ... and stop once the lease (2 s) could not be renewed
        self.assertIn("lost etcd", a.stderr())
        self.assertTrue([n for n in os.listdir(self.marks) if n.startswith("stopped.")])

    def test_a_prefix_holding_other_data(self):
        job = "/ddprun/job-test_a_prefix_holding_other_data/"
        for key in ("nodes/intruder", "req/intruder/1", "ev/x/1", "state", "junk"):
            self.etcd.put(job + key, "not ddprun's")
        a = self.start("a", self.A, 1, "ok")
        b = self.start("b", self.B, 1, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("does not hold", a.stderr() + b.stderr())

    def test_bad_input(self):
        cases = [
            ("lease_ttl=0", "lease_ttl"),
            ("protocol=gopher", "protocol"),
            ("cacert=/x", "protocol=https"),
            ("is_host=1", "is_host"),
            ("flavour=mild", "unknown key"),
            # the presence mesh's key, removed: refused naming what replaced it
            ("presence_timeout=1", "presence_timeout: removed; a lost node is noticed at "
             "lease_ttl, lower it with --rdzv-conf lease_ttl=SECONDS"),
        ]
        for conf, fragment in cases:
            with self.subTest(conf=conf):
                a = self.start("bad", self.A, 1, "ok", conf=conf)
                self.assertEqual(a.wait(), 2, a.stderr())
                self.assertIn(fragment, a.stderr())
        a = self.start("bad", self.A, 1, "ok", endpoints="h1,,h2")
        self.assertEqual(a.wait(), 2, a.stderr())
        self.assertIn("empty entry", a.stderr())


class EtcdClusterTest(EtcdCase):
    MEMBERS = 3

    def test_leader_killed_mid_job_the_job_goes_on(self):
        env = {"SMALL": "0"}  # wait_big: wait for SIGTERM, then exit 0 when told to stop
        a = self.start("a", self.A, 1, "fail_b", extra=["--max-restarts", "1"])
        b = self.start("b", self.B, 1, "fail_b", extra=["--max-restarts", "1"])
        wait_for(lambda: len(self.started()) == 2, 20, "round 1")
        leader = self.etcd.leader()
        self.assertIsNotNone(leader)
        self.etcd.kill(leader)
        # fail_b: group rank 1 fails 0.3 s in, after the leader died; the job restarts once
        # through the remaining quorum and then succeeds.
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(r["RC"] for r in rows), ["0", "0", "1", "1"])


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
