"""Two nodes of a c10d job in network namespaces (own IP each, joined by a veth pair): the
second joins the first's rendezvous as a client, and a partition is caught by the heartbeats
on both sides (root and netns needed, skipped otherwise). Usage:
    test_multinode_netns.py DDPRUN [--daemon=DDP_RENDEZVOUS] [TestClass]
"""
import os
import sys
import time

import multinode_case
from multinode_case import MultiNodeCase
import netns  # noqa: E402  (multinode_case put testlib on the path)
from procs import wait_for  # noqa: E402


class NetnsTest(MultiNodeCase):
    """Each node in its own network namespace with its own IP, joined by a veth pair."""

    def setUp(self):
        super().setUp()
        self.addrs = ["10.231.0.1", "10.231.0.2"]
        self.hosts = netns.two_hosts_for(self, "dm", self.addrs)
        self.ns = self.hosts.ns

    def start_in(self, i, name, nproc, mode, **kwargs):
        return self.start(name, self.addrs[i], nproc, mode, prefix=self.hosts.exec_prefix(i),
                          **kwargs)

    def test_two_namespaces_ranks_and_store(self):
        self.endpoint = self.addrs[0]
        a = self.start_in(0, "a", 2, "ok")
        self.wait_hosting(a)
        b = self.start_in(1, "b", 2, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("joining it as a client", b.stderr())  # 10.231.0.1 is not b's address
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1, 2, 3])
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"4"})
        masters = {r["MASTER"] for r in rows}
        self.assertEqual(len(masters), 1)
        self.assertIn(masters.pop().split(":")[0], self.addrs)

    def test_partition_caught_by_heartbeats(self):
        self.endpoint = self.addrs[0]
        env = {"SMALL": "2"}
        # A 2 s heartbeat budget: short enough to keep the test quick, long enough that the
        # healthy node a meets it on a loaded machine (its silence is not what is tested).
        budget = 2.0
        conf = "last_call_timeout=30,keep_alive_interval=0.25,keep_alive_max_attempt=8"
        extra = ["--max-restarts", "1"]
        a = self.start_in(0, "a", 2, "wait_big", nnodes="1:2", extra=extra, env_extra=env,
                          conf=conf)
        self.wait_hosting(a)
        b = self.start_in(1, "b", 2, "wait_big", nnodes="1:2", extra=extra, env_extra=env,
                          conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        b_group = {r["GROUP_RANK"] for r in self.env_lines(b.stdout())}
        self.assertEqual(len(b_group), 1, b.stdout())
        b_group = b_group.pop()
        cut = time.monotonic()
        cut_wall = time.time()
        self.hosts.link_down(1)
        # The cut-off agent notices by itself: the daemon answers nothing for the budget, so b
        # stops its workers and exits 1. The deadlines below are generous (how fast is a
        # benchmark's question): they only tell "noticed by itself" from "never".
        self.assertEqual(b.wait(timeout=budget + 15), 1, b.stderr())
        b_out = time.monotonic() - cut
        self.assertEqual(a.wait(), 0, a.stderr())
        caught = time.monotonic() - cut
        print("partition -> node a finished at MIN: %.0f ms; cut-off node b exited: %.0f ms"
              % (caught * 1000, b_out * 1000), file=sys.stderr)
        self.assertLess(caught, budget + 15)
        self.assertLess(b_out, budget + 15)
        self.assertIn("heartbeat", a.stderr().lower())
        self.assertIn("lost the rendezvous daemon", b.stderr())
        self.assertIn("sent nothing for", b.stderr())
        for local in ("0", "1"):  # b's workers were SIGTERMed, not left running
            with open(os.path.join(self.marks, "stopped.%s.%s" % (b_group, local))) as f:
                stopped_at = float(f.read())
            self.assertLess(stopped_at - cut_wall, budget + 15)
        last = [r for r in self.env_lines(a.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1])
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart


if __name__ == "__main__":
    import testmain  # noqa: E402
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
