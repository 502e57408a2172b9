"""One job through the etcd rendezvous backend (--rdzv-backend etcd): the ranks of two nodes,
a failure on one node stopping the other and the job-wide restart, and elastic membership (a
node killed, leaving, or joining while the job runs). Real etcd and real ddprun agents on
loopback addresses; skipped (exit 77) where etcd is not installed. Usage:
    test_etcd_jobs.py DDPRUN [TestClass]
"""
import os
import signal
import sys
import time

import etcd_case
from etcd_case import ElasticPairCase, EtcdCase
from procs import wait_for  # noqa: E402  (etcd_case put testlib on the path)


class EtcdRanksTest(EtcdCase):
    def check_world(self, nprocs, backend="etcd"):
        a = self.start("a", self.A, nprocs[0], "ok", backend=backend)
        b = self.start("b", self.B, nprocs[1], "ok", backend=backend)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        world = sum(nprocs)
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), list(range(world)))
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {str(world)})
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in rows}, {"2"})
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        self.assertEqual(len({r["MASTER"] for r in rows}), 1)
        by_group = {}
        for r in rows:
            by_group.setdefault(r["GROUP_RANK"], []).append(r)
        self.assertEqual(sorted(by_group), ["0", "1"])
        for r in by_group["1"]:  # global rank = the node's offset + local rank
            self.assertEqual(int(r["RANK"]), len(by_group["0"]) + int(r["LOCAL_RANK"]))
        # The workers' store is group rank 0's agent.
        zero = a if any(r["GROUP_RANK"] == "0" for r in self.env_lines(a.stdout())) else b
        master = rows[0]["MASTER"].split(":")[0]
        self.assertEqual(master, self.A if zero is a else self.B)
        # Every key of the job but its record of the end went with the agents' leases.
        prefix = "/ddprun/job-%s/" % self.id().split(".")[-1]
        self.assertEqual(sorted(self.etcd.keys(prefix)), [prefix + "finished", prefix + "state"])

    def test_two_by_two(self):
        self.check_world([2, 2])

    def test_different_worker_counts_and_the_v2_spelling(self):
        self.check_world([2, 1], backend="etcd-v2")

    def test_a_waiting_node_says_how_far_the_rendezvous_is(self):
        a = self.start("a", self.A, 1, "ok")
        wait_for(lambda: "waiting for the other nodes: 1 of 2 joined" in a.stderr(), 10,
                 "a's progress line")
        self.assertRegex(a.stderr(), r"1 of 2 joined; \d+ s left before the join timeout")
        b = self.start("b", self.B, 1, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertNotIn("of 2 joined", b.stderr())  # it formed the round at once

    def test_a_finished_run_id_is_refused(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1")
        self.assertEqual(a.wait(), 0, a.stderr())
        late = self.start("late", self.B, 1, "ok", nnodes="1")
        self.assertEqual(late.wait(), 1, late.stderr())
        self.assertIn("finished", late.stderr())
        self.assertIn("different --rdzv-id", late.stderr())
        self.assertEqual(self.started(), ["started.0.0.0"])

    def test_a_job_secret_guards_the_hosts_daemon(self):
        def secret(name, text):
            path = os.path.join(self.marks, name)
            with open(path, "w") as f:
                f.write(text + "\n")
            os.chmod(path, 0o600)
            return path
        good = secret("good", "a-secret-of-this-job-0123456789")
        bad = secret("bad", "another-secret-entirely-98765432")
        conf = etcd_case.FAST_CONF
        a = self.start("a", self.A, 1, "ok", conf=conf + ",secret_file=" + good)
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 10, "a hosting")
        intruder = self.start("x", self.C, 1, "ok", conf=conf + ",secret_file=" + bad)
        self.assertEqual(intruder.wait(), 1, intruder.stderr())  # refused by a's daemon
        self.assertRegex(intruder.stderr(), r"rendezvous refused: .*(secret|authenticat)")
        b = self.start("b", self.B, 1, "ok", conf=conf + ",secret_file=" + good)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertEqual(len(self.env_lines(a.stdout()) + self.env_lines(b.stdout())), 2)


class EtcdFailureTest(EtcdCase):
    def test_failure_on_one_node_stops_the_other(self):
        a = self.start("a", self.A, 2, "fail_b")
        b = self.start("b", self.B, 2, "fail_b")
        code_a, code_b = a.wait(), b.wait()
        self.assertEqual(code_a, 3, a.stderr())
        self.assertEqual(code_b, 3, b.stderr())
        # Told, not timed out; the latency is a benchmark's number.
        self.assert_stopped_within(10.0, 2, "cross-node teardown through etcd")
        ra, rb = self.root_cause(a.stderr()), self.root_cause(b.stderr())
        self.assertEqual(ra, rb)
        self.assertRegex(ra, r"rank\s*:\s*2 \(local_rank: 0\)")

    def test_restart_is_job_global(self):
        a = self.start("a", self.A, 2, "fail_b", extra=["--max-restarts", "1"])
        b = self.start("b", self.B, 2, "fail_b", extra=["--max-restarts", "1"])
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(len([r for r in rows if r["RC"] == "0"]), 4)
        second = [r for r in rows if r["RC"] == "1"]
        self.assertEqual(sorted(int(r["RANK"]) for r in second), [0, 1, 2, 3])


class EtcdElasticTest(ElasticPairCase):
    CONF = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def test_sigterm_leaves_at_once(self):
        a, b = self.start_pair()
        start = time.time()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(b.wait(), 128 + signal.SIGTERM, b.stderr())
        self.check_survivor(a)
        self.assertLess(self.restarted_after(start), 1.5)  # revoked, not expired
        self.assertIn("left", a.stderr())

    def test_scale_up_while_running_does_not_use_a_restart(self):
        env = {"SMALL": "2"}
        conf = "last_call_timeout=0.1,join_timeout=20,lease_ttl=2"
        a = self.start("a", self.A, 2, "wait_small", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 2, 20, "round 1 with node a alone")
        b = self.start("b", self.B, 2, "wait_small", nnodes="1:2", env_extra=env, conf=conf)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        big = [r for r in rows if r["WORLD_SIZE"] == "4"]
        self.assertEqual(sorted(int(r["RANK"]) for r in big), [0, 1, 2, 3])
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        self.assertEqual({r["MASTER"] for r in big},
                         {r["MASTER"] for r in self.env_lines(a.stdout())})


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
