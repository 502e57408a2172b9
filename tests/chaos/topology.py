"""Where the campaign's nodes live: on loopback (each node its own 127.0.0.x address), or in
network namespaces (each node a host with its own IP, all on one bridge in a hub namespace that
also holds the standalone daemon), so a node can be cut off by taking its link down."""
import os
import subprocess


class Unavailable(Exception):
    """Namespaces cannot be made here (no root, no netns): namespaced trials are skipped."""


def ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), check=check, capture_output=True, timeout=10)


class Loopback:
    name = "loopback"
    daemon_addr = "127.0.0.1"
    ifname = None

    def addr(self, node):
        return "127.0.0.%d" % (2 + node)

    def prefix(self, node):
        return []

    def daemon_prefix(self):
        return []

    def link(self, node, up):
        raise RuntimeError("loopback nodes have no link to cut")

    def remove(self):
        pass


class Namespaces:
    """`count` hosts on a bridge. Names carry a per-process tag: unique machine-wide."""
    name = "netns"
    ifname = "ddp0"  # each host's interface (GLOO_SOCKET_IFNAME for torch workers)
    subnet = "10.235.0."
    daemon_addr = subnet + "1"

    def __init__(self, count):
        tag = "cx%d" % (os.getpid() % 100000)
        self.hub = tag + "h"
        self.hosts = ["%s%d" % (tag, i) for i in range(count)]
        self.created = []
        try:
            ip("netns", "add", self.hub)
            self.created.append(self.hub)
            ip("-n", self.hub, "link", "set", "lo", "up")
            ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            ip("-n", self.hub, "addr", "add", self.daemon_addr + "/24", "dev", "br0")
            ip("-n", self.hub, "link", "set", "br0", "up")
            for i, ns in enumerate(self.hosts):
                ip("netns", "add", ns)
                self.created.append(ns)
                host_end, hub_end = "v%sa%d" % (tag, i), "v%sb%d" % (tag, i)
                ip("link", "add", host_end, "type", "veth", "peer", "name", hub_end)
                ip("link", "set", host_end, "netns", ns)
                ip("link", "set", hub_end, "netns", self.hub)
                ip("-n", ns, "link", "set", host_end, "name", self.ifname)
                ip("-n", ns, "addr", "add", self.addr(i) + "/24", "dev", self.ifname)
                ip("-n", ns, "link", "set", self.ifname, "up")
                ip("-n", ns, "link", "set", "lo", "up")
                ip("-n", self.hub, "link", "set", hub_end, "master", "br0")
                ip("-n", self.hub, "link", "set", hub_end, "up")
        except (OSError, subprocess.CalledProcessError) as e:
            self.remove()
            raise Unavailable("network namespaces unavailable here (%s)" % e) from e

    def addr(self, node):
        return self.subnet + str(10 + node)

    def prefix(self, node):
        return ["ip", "netns", "exec", self.hosts[node]]

    def daemon_prefix(self):
        return ["ip", "netns", "exec", self.hub]

    def link(self, node, up):
        ip("-n", self.hosts[node], "link", "set", self.ifname, "up" if up else "down")

    def remove(self):
        for ns in self.created:
            pids = ip("netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            ip("netns", "del", ns, check=False)
        self.created = []


def namespaces_or_none(count):
    """Namespaces for `count` hosts, or None (with the reason printed) where unavailable."""
    try:
        return Namespaces(count)
    except Unavailable as e:
        print("chaos: %s; namespaced trials are skipped" % e, flush=True)
        return None
