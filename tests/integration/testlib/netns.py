"""Two test hosts on this machine: network namespaces joined by a veth pair, each with its own
address. The test that makes them removes them (deleting a namespace deletes its veth end)."""
import os
import subprocess
import time


IFNAME = "ddp0"  # each host's end of the veth pair, renamed inside its namespace


class Unavailable(Exception):
    """The kernel or the privileges refuse namespaces here: the test should skip."""


def ip(*args):
    subprocess.run(["ip"] + list(args), check=True, capture_output=True, timeout=10)


class TwoHosts:
    def __init__(self, tag, addrs):
        """tag: a short name prefix (namespaces and veth names must be unique machine-wide);
        addrs: the two hosts' IPv4 addresses (a /24 between them)."""
        unique = "%d%d" % (os.getpid() % 10000, int(time.monotonic() * 1000) % 1000)
        self.ns = ["%sa%s" % (tag, unique), "%sb%s" % (tag, unique)]
        self.veth = ["v%sa%s" % (tag, unique), "v%sb%s" % (tag, unique)]
        self.addrs = list(addrs)
        self.created = []
        try:
            for ns in self.ns:
                ip("netns", "add", ns)
                self.created.append(ns)
            ip("link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])
            for ns, veth, addr in zip(self.ns, self.veth, self.addrs):
                ip("link", "set", veth, "netns", ns)
                ip("-n", ns, "link", "set", veth, "name", IFNAME)
                ip("-n", ns, "addr", "add", addr + "/24", "dev", IFNAME)
                ip("-n", ns, "link", "set", IFNAME, "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except (OSError, subprocess.CalledProcessError) as e:
            self.remove()
            raise Unavailable("network namespaces unavailable here (%s); needs root and netns"
                              % e) from e

    def exec_prefix(self, i):
        """The argv prefix that runs a command inside host i."""
        return ["ip", "netns", "exec", self.ns[i]]

    def link_down(self, i):
        """Cuts host i off (its veth end down): a partition."""
        ip("-n", self.ns[i], "link", "set", IFNAME, "down")

    def remove(self):
        for ns in self.created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.created = []


def two_hosts_for(case, tag, addrs):
    """TwoHosts for the unittest `case`, removed when its test ends (after tearDown); the test
    skips where namespaces are unavailable."""
    try:
        hosts = TwoHosts(tag, addrs)
    except Unavailable as e:
        case.skipTest(str(e))
    case.addCleanup(hosts.remove)
    return hosts
