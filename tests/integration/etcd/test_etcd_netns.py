"""The etcd backend across real hosts: two network namespaces joined by a veth pair, etcd on
host 0, one agent per host advertising its own address; Gloo training across them, and a
partitioned node dropped when its lease expires (nothing closes, nothing revokes). Skipped (exit
77) without root, network namespaces or etcd. Usage:
    test_etcd_netns.py DDPRUN [TestClass]
"""
import os
import re
import sys
import time

import etcd_case
from etcd_case import TORCH_WORKER, EtcdCase
import etcd  # noqa: E402  (etcd_case put testlib on the path)
import netns  # noqa: E402
from procs import wait_for  # noqa: E402


class EtcdNetnsTest(EtcdCase):
    """Two hosts in network namespaces (veth pair); etcd runs on host 0, the agents one per
    host advertising their own addresses."""

    def make_cluster(self):
        self.hosts = netns.two_hosts_for(self, "de", ["10.234.0.1", "10.234.0.2"])
        self.A, self.B = self.hosts.addrs
        return etcd.Cluster(1, host=self.A, prefix=self.hosts.exec_prefix(0))

    def start_in(self, i, name, nproc, mode, **kwargs):
        agent = self.start(name, self.hosts.addrs[i], nproc, mode, **kwargs)
        return agent

    def start(self, name, addr, nproc, mode, **kwargs):
        i = self.hosts.addrs.index(addr)
        kwargs.setdefault("prefix", self.hosts.exec_prefix(i))
        return super().start(name, addr, nproc, mode, **kwargs)

    def test_gloo_training_across_two_namespaced_nodes(self):
        # Gloo must use the veth, not the hostname's address.
        env = {"DDPRUN_PYTHON": "/usr/bin/python3", "GLOO_SOCKET_IFNAME": netns.IFNAME}
        prog = [TORCH_WORKER]
        a = self.start("a", self.A, 2, "ok", env_extra=env, program=prog)
        b = self.start("b", self.B, 2, "ok", env_extra=env, program=prog)
        self.assertEqual(a.wait(90), 0, a.stderr() + a.stdout())
        self.assertEqual(b.wait(90), 0, b.stderr() + b.stdout())
        sums = re.findall(r"allreduce rank (\d) of 4 sum (\S+)", a.stdout() + b.stdout())
        self.assertEqual(sorted(int(r) for r, _ in sums), [0, 1, 2, 3])
        self.assertEqual({s for _, s in sums}, {"6.0"})

    def test_partitioned_node_is_dropped_and_stops_its_workers(self):
        # No socket closes and no process dies here: a's daemon drops b after lease_ttl (2 s)
        # of silence.
        env = {"SMALL": "2"}
        conf = "last_call_timeout=30,join_timeout=20,lease_ttl=2"
        a = self.start("a", self.A, 2, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 10, "a hosting")
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        cut = time.monotonic()
        self.hosts.link_down(1)  # b loses etcd and a, and acknowledges nothing any more
        wait_for(lambda: "round 2:" in a.stderr(), 10, "a re-formed without b")
        noticed = time.monotonic() - cut
        self.assertEqual(a.wait(), 0, a.stderr())
        caught = time.monotonic() - cut
        self.assertEqual(b.wait(), 1, b.stderr())
        b_out = time.monotonic() - cut
        print("partition -> a re-formed: %.2f s; a finished at MIN: %.2f s; cut-off b exited: "
              "%.2f s" % (noticed, caught, b_out), file=sys.stderr)
        self.assertLess(noticed, 2 + 1)  # the lease TTL + 1 s
        self.assertLess(b_out, 2 + 6)  # the lease TTL, then its workers' stop
        self.assertIn("lost etcd", b.stderr())
        self.assertTrue([n for n in os.listdir(self.marks) if n.startswith("stopped.")])
        last = [r for r in self.env_lines(a.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1])


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
