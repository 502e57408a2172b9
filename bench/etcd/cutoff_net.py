"""The network of bench.py's "node cut off" case: two node hosts and etcd, each in its own
network namespace, on one bridge (the chaos campaign's topology, tests/chaos/topology.py), so
either node can be cut off while etcd and the other node still reach each other.

The cut makes the node's kernel send nothing any more, as a machine that lost power or its
network: a `pfifo` queue of length 0 on its interface drops every packet it sends (TCP, ARP;
nothing answers, no RST, no ICMP), while its peers' kernels behave exactly as towards a dead
machine (they send, retransmit, get nothing back). This kernel has no `netem` and no
iptables/nft here; a kernel without `pfifo` falls back to taking the node's link down (a
partition: its own sockets then see errors, the peers still see silence). `method` says which.

    net = Network()        # raises Unavailable where namespaces cannot be made (not root)
    net.prefix(i) + argv   # runs argv on node i (its hostname is its address: torchrun's
                           # MASTER_ADDR is the hostname of group rank 0's node)
    net.cut(i); net.restore(i); net.stop()
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "chaos"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "testlib"))
import etcd  # noqa: E402
import topology  # noqa: E402

Unavailable = topology.Unavailable
QDISC = "pfifo queue of length 0 on the node's interface (drops all it sends)"
LINK_DOWN = "ip link set down (a partition; no tc or no pfifo qdisc here)"

# Answers once etcd's v3 API does, from inside a node (this process is outside the namespaces).
_PROBE = """
import json, sys, time, urllib.request
url = "http://%s/v3/kv/range" % sys.argv[1]
end = time.time() + 20
while True:
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b'{"key": "AA=="}'), timeout=1)
        break
    except OSError:
        if time.time() > end:
            raise
        time.sleep(0.1)  # etcd starting: the probe's retry period
"""


class Network:
    def __init__(self):
        self.net = topology.Namespaces(2)
        self.ifname = self.net.ifname  # GLOO_SOCKET_IFNAME for the workers
        self.etcd = None
        try:
            self.etcd = etcd.Cluster(1, extra_args=["--enable-v2"], host=self.net.daemon_addr,
                                     prefix=self.net.daemon_prefix())
            self.endpoint = self.etcd.endpoints()
            subprocess.run(self.net.prefix(0) + ["/usr/bin/python3", "-c", _PROBE, self.endpoint],
                           check=True, capture_output=True, timeout=30)
            self.method = self._pick_method()
        except BaseException:
            self.stop()
            raise

    def addr(self, node):
        return self.net.addr(node)

    def prefix(self, node):
        # A UTS namespace whose hostname is the node's address (`unshare` execs, `ip netns
        # exec` too: the spawned pid is the agent's).
        return self.net.prefix(node) + ["unshare", "--uts", "sh", "-c",
                                        'hostname "$0" && exec "$@"', self.addr(node)]

    def _qdisc(self, node, op):
        extra = ["pfifo", "limit", "0"] if op == "add" else []
        subprocess.run(["tc", "-n", self.net.hosts[node], "qdisc", op, "dev", self.ifname,
                        "root"] + extra, check=True, capture_output=True, timeout=10)

    def _pick_method(self):
        try:
            self._qdisc(0, "add")
            self._qdisc(0, "del")
            return QDISC
        except (OSError, subprocess.CalledProcessError):  # no tc, or no pfifo here
            return LINK_DOWN

    def cut(self, node):
        if self.method == QDISC:
            self._qdisc(node, "add")
        else:
            self.net.link(node, False)

    def restore(self, node):
        if self.method == QDISC:
            self._qdisc(node, "del")
        else:
            self.net.link(node, True)

    def stop(self):
        """etcd stopped, then the namespaces removed (any process left in them killed)."""
        if self.etcd:
            self.etcd.stop()
        self.net.remove()
