"""Spares (docs/spares.md): an agent that joins a c10d job running at its maximum of nodes
waits as a spare; when a node is lost, the spare takes that node's group rank and so its
global ranks, and the survivors keep theirs. SpareTest runs its agents on loopback addresses;
NetnsSpareTest on two network namespaces (two agents in each), skipped without root/netns.
Usage:
    test_spares.py DDPRUN [TestClass]
"""
import json
import os
import signal
import subprocess
import sys

import multinode_case
from multinode_case import MultiNodeCase
from procs import free_port, wait_for  # noqa: E402  (multinode_case put testlib on the path)
import netns  # noqa: E402

CONF = "join_timeout=20"


class SpareTest(MultiNodeCase):
    # Where each agent runs: a hosts the rendezvous; d arrives last, as the spare.
    def addr_of(self, name):
        return {"a": self.A, "b": self.B, "c": self.C, "d": self.D}[name]

    C = "127.0.0.4"
    D = "127.0.0.5"

    def job(self, name, extra=()):
        return self.start(name, self.addr_of(name), 2, "until_second", nnodes="3", conf=CONF,
                          extra=list(extra))

    def near_host(self):  # the argv prefix that runs a command where a's status port is
        return []

    def jobs_api(self, port):
        r = subprocess.run(self.near_host() + [
            sys.executable, "-c",
            "import http.client,sys; c=http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]),"
            " timeout=10); c.request('GET','/api/jobs'); print(c.getresponse().read().decode())",
            self.endpoint, str(port)], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["jobs"][0]

    def test_a_spare_takes_the_lost_nodes_ranks_and_the_others_keep_theirs(self):
        status_port = free_port()
        a = self.job("a", ["--status-port", str(status_port)])
        self.wait_hosting(a)
        b, c = self.job("b"), self.job("c")
        wait_for(lambda: len(self.started()) == 6, 30, "6 workers of round 1")
        d = self.job("d")
        wait_for(lambda: any(n["role"] == "spare"
                             for n in self.jobs_api(status_port)["nodes"]), 20,
                 "the fourth agent to wait as a spare")
        out = subprocess.run(self.near_host() + [multinode_case.DDPRUN, "status",
                              "%s:%d" % (self.endpoint, status_port), "job-" + self.id()],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("spare", out.stdout)
        self.assertEqual(self.env_lines(d.stdout()), [], "a spare runs no workers")
        agents = {"a": a, "b": b, "c": c}
        first = {name: self.env_lines(agent.stdout()) for name, agent in agents.items()}
        # The middle node (group rank 1) is lost: without spares its survivors would move down.
        lost = next(name for name, rows in first.items() if rows[0]["GROUP_RANK"] == "1")
        open(os.path.join(self.marks, "second"), "w").close()
        agents[lost].proc.send_signal(signal.SIGKILL)
        agents[lost].wait()
        survivors = {name: agent for name, agent in agents.items() if name != lost}
        for agent in list(survivors.values()) + [d]:
            self.assertEqual(agent.wait(), 0, agent.stderr())

        def ranks(rows):
            return sorted((r["GROUP_RANK"], int(r["RANK"]), r["LOCAL_RANK"]) for r in rows)
        for name, agent in survivors.items():
            second = self.env_lines(agent.stdout())[len(first[name]):]
            self.assertEqual(ranks(second), ranks(first[name]), name + " kept its ranks")
        spare = self.env_lines(d.stdout())
        self.assertEqual(ranks(spare), ranks(first[lost]), "the spare got the lost node's ranks")
        rows = spare + sum((self.env_lines(x.stdout()) for x in survivors.values()), [])
        self.assertEqual({r["RC"] for r in rows}, {"0"}, "a lost node uses no restart")
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"6"})


class NetnsSpareTest(SpareTest):
    """a and c in one namespace, b and d in the other."""

    def setUp(self):
        super().setUp()
        self.hosts = netns.two_hosts_for(self, "ds", ["10.233.4.2", "10.233.4.3"])
        self.A, self.B = self.hosts.addrs
        self.C, self.D = self.A, self.B
        self.endpoint = self.A

    def near_host(self):
        return self.hosts.exec_prefix(0)

    def node_prefix(self, addr):
        return self.hosts.exec_prefix(self.hosts.addrs.index(addr))

if __name__ == "__main__":
    import testmain  # noqa: E402
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
