"""Two ssh "hosts" for the fan-out tests (SshHostsCase): network namespaces, each running a
real OpenSSH server (Debian's /usr/sbin/sshd, host and user keys generated here) on
10.<net>.1 and .2, joined to this (root) namespace through a bridge (10.<net>.254) on which the
launching ddprun hosts the rendezvous. Every interface on the namespace side is named `fan0`,
so GLOO_SOCKET_IFNAME=fan0 is right on both hosts. Everything set up here (namespaces, bridge,
sshd, keys) is removed at the end; without root or network namespaces the class skips itself,
saying so.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from fanout_case import HERE, FanoutCase
from procs import wait_for  # noqa: E402  (fanout_case put testlib on the path)

TORCH_WORKER = os.path.join(HERE, "..", "multinode", "torch_allreduce.py")
SSHD = "/usr/sbin/sshd"


class SshHostsCase(FanoutCase):
    @classmethod
    def setUpClass(cls):
        cls.net = None
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root to create network namespaces")
        if not os.path.exists(SSHD) or shutil.which("ssh") is None:
            raise unittest.SkipTest("needs Debian's openssh-server and openssh-client")
        cls.keys = tempfile.mkdtemp(prefix="ddprun-fanout-ssh-")
        tag = "%d%03d" % (os.getpid() % 10000, time.monotonic_ns() // 1000000 % 1000)
        # A /24 no interface uses yet (tests of other runs may hold theirs at the same time).
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
        sub = 100 + os.getpid() % 150
        while "10.233.%d." % sub in used:
            sub = 100 + (sub - 99) % 150
        cls.prefix = "10.233.%d." % sub
        cls.addrs = [cls.prefix + "1", cls.prefix + "2"]
        cls.bridge = "fbr" + tag
        cls.ns = ["ddpf0" + tag, "ddpf1" + tag]
        cls.created_ns = []
        cls.sshd = []
        try:
            cls.setup_network(tag)
        except (OSError, subprocess.CalledProcessError) as e:
            cls.teardown_network()
            raise unittest.SkipTest("network namespaces unavailable here (%s)" % e)
        try:
            cls.setup_ssh()
        except Exception:
            cls.teardown_network()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.teardown_network()

    @staticmethod
    def ip(*args):
        subprocess.run(["ip"] + list(args), check=True, capture_output=True, timeout=10)

    @classmethod
    def setup_network(cls, tag):
        cls.ip("link", "add", cls.bridge, "type", "bridge")
        cls.ip("addr", "add", cls.prefix + "254/24", "dev", cls.bridge)
        cls.ip("link", "set", cls.bridge, "up")
        for i, (ns, addr) in enumerate(zip(cls.ns, cls.addrs)):
            cls.ip("netns", "add", ns)
            cls.created_ns.append(ns)
            outer, inner = "fv%d%s" % (i, tag), "fp%d%s" % (i, tag)
            cls.ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            cls.ip("link", "set", outer, "master", cls.bridge)
            cls.ip("link", "set", outer, "up")
            cls.ip("link", "set", inner, "netns", ns)
            cls.ip("-n", ns, "link", "set", inner, "name", "fan0")
            cls.ip("-n", ns, "addr", "add", addr + "/24", "dev", "fan0")
            cls.ip("-n", ns, "link", "set", "fan0", "up")
            cls.ip("-n", ns, "link", "set", "lo", "up")

    @classmethod
    def setup_ssh(cls):
        k = cls.keys
        for name in ("host_key", "id_user"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(k, name)], check=True, capture_output=True, timeout=30)
        shutil.copy(os.path.join(k, "id_user.pub"), os.path.join(k, "authorized_keys"))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        for i, (ns, addr) in enumerate(zip(cls.ns, cls.addrs)):
            config = os.path.join(k, "sshd_config%d" % i)
            with open(config, "w") as f:
                f.write("\n".join([
                    "Port 22", "ListenAddress " + addr,
                    "HostKey " + os.path.join(k, "host_key"),
                    "AuthorizedKeysFile " + os.path.join(k, "authorized_keys"),
                    "PidFile " + os.path.join(k, "sshd%d.pid" % i),
                    "StrictModes no", "UsePAM no", "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                    "MaxStartups 100", "LogLevel ERROR", ""]))
            log = open(os.path.join(k, "sshd%d.log" % i), "wb")
            proc = subprocess.Popen(["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", config],
                                    stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            cls.sshd.append((proc, log))
        for addr in cls.addrs:
            def listening(addr=addr):
                try:
                    with socket.create_connection((addr, 22), timeout=1):
                        return True
                except OSError:
                    return False
            wait_for(listening, 20, "sshd on " + addr)
        cls.ssh_config = os.path.join(k, "ssh_config")
        with open(cls.ssh_config, "w") as f:
            f.write("Host *\n  User root\n  StrictHostKeyChecking no\n"
                    "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  IdentitiesOnly yes\n")

    @classmethod
    def teardown_network(cls):
        for proc, log in getattr(cls, "sshd", []):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        cls.sshd = []
        for ns in getattr(cls, "created_ns", []):  # deleting a namespace deletes its veth end
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        cls.created_ns = []
        subprocess.run(["ip", "link", "del", cls.bridge], capture_output=True)
        if getattr(cls, "keys", None):
            shutil.rmtree(cls.keys, ignore_errors=True)
            cls.keys = None

    def ssh_args(self, hosts=None, nproc="2"):
        return ["--hosts", ",".join(hosts or self.addrs), "--nproc-per-node", nproc,
                "--ssh-command", "ssh -F " + self.ssh_config,
                "--ssh-identity", os.path.join(self.keys, "id_user"),
                "--forward-env", "DDPRUN_PYTHON,GLOO_*,FANOUT_MARK,MARK_DIR,WAIT_BELOW",
                "--shutdown-timeout", "5",
                "--rdzv-conf", "last_call_timeout=0.2,keep_alive_interval=0.5,join_timeout=60"]

    def launch(self, extra, program, **env):
        return self.start(self.ssh_args() + list(extra) + list(program),
                          GLOO_SOCKET_IFNAME="fan0", **env)

    def start_waiting_job(self):
        # Every worker all-reduces (world 4 < WAIT_BELOW=5), marks itself, then waits.
        launcher = self.launch([], [TORCH_WORKER], WAIT_BELOW="5")
        wait_for(lambda: len(self.marks_named("small.")) == 4 or launcher.proc.poll() is not None,
                 90, "4 Gloo workers in their wait")
        self.assertIsNone(launcher.proc.poll(), launcher.stderr() + launcher.stdout())
        return launcher
