"""Coordinator takeover in the etcd backend: the coordinating agent is frozen past its lease
while a worker fails on another node; a successor takes over the running round from etcd's
record, and the deposed coordinator, woken, writes nothing. Real etcd and real ddprun agents on
loopback addresses; skipped (exit 77) where etcd is not installed. Usage:
    test_etcd_takeover.py DDPRUN [TestClass]
"""
import json
import os
import re
import signal
import sys

import etcd_case
from etcd_case import TAKEOVER_WORKER, EtcdCase
from procs import wait_for  # noqa: E402  (etcd_case put testlib on the path)


class EtcdTakeoverTest(EtcdCase):
    """The coordinating agent is frozen (SIGSTOP) past its lease while a worker fails on
    another node: the successor takes over the running round, the failure uses one restart."""
    CONF = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def start_three(self):
        args = dict(nnodes="2:3", conf=self.CONF, extra=["--max-restarts", "1"],
                    program=["--no-python", TAKEOVER_WORKER])
        c = self.start("c", self.C, 1, "", **args)
        wait_for(lambda: "coordinating job" in c.stderr(), 10, "c coordinating")
        a = self.start("a", self.A, 1, "", **args)
        b = self.start("b", self.B, 1, "", env_extra={"FAIL_HERE": "1"}, **args)
        wait_for(lambda: len(self.started()) == 3, 20, "3 workers of round 1")
        return c, a, b

    def fail_while_frozen(self, c, a, b):
        c.proc.send_signal(signal.SIGSTOP)
        open(os.path.join(self.marks, "trigger"), "w").close()  # b's worker fails now
        wait_for(lambda: os.path.exists(os.path.join(self.marks, "failed")), 10, "b's failure")
        wait_for(lambda: "taking over its running round 1" in a.stderr() + b.stderr(), 10,
                 "a or b taking over after c's lease expired")

    def check_one_restart(self, a, b):
        self.assertEqual(a.wait(), 3, a.stderr())
        self.assertEqual(b.wait(), 3, b.stderr())
        for agent in (a, b):
            rcs = sorted({r["RC"] for r in self.env_lines(agent.stdout())})
            self.assertEqual(rcs, ["0", "1"], agent.stdout())  # restart count 1 on every node
        self.assertEqual(self.root_cause(a.stderr()), self.root_cause(b.stderr()))
        job = "/ddprun/job-%s/" % self.id().split(".")[-1]
        rounds = [json.loads(v) for _, v in self.etcd.history(job + "state")]
        self.assertEqual([(r["round"], r["restart_count"]) for r in rounds], [(1, 0), (2, 1)])
        return job, rounds

    def test_failure_while_the_coordinator_is_replaced_uses_one_restart(self):
        c, a, b = self.start_three()
        self.fail_while_frozen(c, a, b)
        c.proc.send_signal(signal.SIGKILL)
        c.wait()
        self.check_one_restart(a, b)

    def test_a_deposed_coordinator_writes_nothing(self):
        c, a, b = self.start_three()
        self.fail_while_frozen(c, a, b)
        c.proc.send_signal(signal.SIGCONT)  # it wakes up after another took over
        self.assertEqual(c.wait(), 1, c.stderr())
        why = re.search(r".*(lease expired|no longer coordinates).*", c.stderr())
        self.assertIsNotNone(why, c.stderr())
        print("the deposed coordinator: " + why.group(0), file=sys.stderr)
        job, rounds = self.check_one_restart(a, b)
        # Only the coordinator writes the job's state and end: one write per round, and one
        # end, each after the successor's claim; nothing from c after its lease expired.
        claims = self.etcd.history(job + "coordinator")
        self.assertEqual(len(claims), 2, claims)
        successor = claims[1][0]
        writes = self.etcd.history(job + "state")
        self.assertGreater(writes[1][0], successor)
        ends = self.etcd.history(job + "finished")
        self.assertEqual(len(ends), 1)
        self.assertGreater(ends[0][0], successor)


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
