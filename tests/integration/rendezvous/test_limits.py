"""Connection limits and store confinement of ddp-rendezvous (docs/security.md), with real
processes: a daemon under a small open-file limit, a client holding hundreds of idle sockets and
half-sent requests from its own loopback address (127.0.0.2; Linux routes all of 127/8 to lo),
a real PyTorch TCPStore client (/usr/bin/python3) and real ddprun agents.

usage: test_limits.py DAEMON DDPRUN [unittest args]
"""
import os
import re
import resource
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from daemon_util import MODERN_VALIDATE, Daemon, recv_exact, s  # noqa: E402
from procs import OutputProcess, free_port, poll_until, wait_for  # noqa: E402

DAEMON = None
DDPRUN = None
PYTHON = "/usr/bin/python3"
TORCH_WORKER = os.path.join(HERE, "..", "multinode", "torch_allreduce.py")
FLAG_WORKER = os.path.join(HERE, "flag_worker.sh")
OK_WORKER = os.path.join(HERE, "..", "multinode", "worker.sh")
FAST_CONF = "last_call_timeout=0.2,join_timeout=30"
JUNK = "127.0.0.2"
SLOW = "127.0.0.3"

# The real client: a PyTorch TCPStore (1.13 here: two connections, the second never written).
TORCH_CLIENT = r"""
import datetime, sys, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), is_master=False,
                  timeout=datetime.timedelta(seconds=20))
s.set("k", "v")
assert s.get("k") == b"v"
assert s.add("n", 2) == 2
print("TORCH_OK", flush=True)
"""


def low_nofile(n):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def has_torch():
    return subprocess.run([PYTHON, "-c", "import torch.distributed"],
                          capture_output=True).returncode == 0


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_from(source, port, count):
    """`count` connections to the daemon from `source` (bound before connecting)."""
    socks = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((source, 0))
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        socks.append(sock)
    return socks


def closed(sock):
    """True when the daemon has closed `sock` (EOF or reset readable now)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (ConnectionResetError, BlockingIOError):
        return True


def answered(sock):
    """True when a reply waits unread on `sock`."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except (ConnectionResetError, BlockingIOError):
        return False


def count_closed(socks):
    return sum(1 for sock in socks if closed(sock))


def torch_client(port):
    out = subprocess.run([PYTHON, "-c", TORCH_CLIENT, str(port)], capture_output=True, text=True,
                         timeout=60)
    return out.returncode, out.stdout + out.stderr


class LimitsCase(unittest.TestCase):
    def setUp(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 2048 <= hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
        self.socks = []
        self.daemons = []
        self.procs = []
        self.tmpdir = tempfile.TemporaryDirectory()
        self.tmp = self.tmpdir.name

    def tearDown(self):
        for sock in self.socks:
            sock.close()
        for p in self.procs:
            p.kill()
        for d in self.daemons:
            d.kill()
        self.tmpdir.cleanup()

    def assert_torch_client_works(self, port):
        rc, text = torch_client(port)
        self.assertEqual(rc, 0, text)
        self.assertIn("TORCH_OK", text)

    def stop_and_count(self, d, pattern):
        """Stops the daemon (exit 0) and returns (its log, how many lines match pattern)."""
        self.assertEqual(d.stop(), 0)
        err = d.stderr_text()
        return err, len(re.findall(pattern, err))

    def daemon(self, *args, nofile=256):
        d = Daemon(DAEMON, *args, preexec_fn=low_nofile(nofile))
        self.daemons.append(d)
        return d

    def agent(self, name, addr, port, run_id, program, extra_env=None):
        env = dict(os.environ, MARK_DIR=self.tmp, FLAG=os.path.join(self.tmp, "flag"),
                   DDPRUN_PYTHON=PYTHON)
        env.update(extra_env or {})
        args = [DDPRUN, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-id", run_id,
                "--rdzv-conf", FAST_CONF, "--local-addr", addr, "--shutdown-timeout", "5"]
        p = OutputProcess(self.tmp, name, args + program, env, timeout=90)
        self.procs.append(p)
        return p


class JunkTest(LimitsCase):
    def test_idle_and_slow_junk_while_real_clients_work(self):
        if not has_torch():
            self.skipTest("no PyTorch for " + PYTHON)
        # 256 descriptors: at most 192 connections, 96 per peer address.
        d = self.daemon("--first-request-timeout", "2")
        cpu_before = cpu_seconds(d.proc.pid)
        started = time.monotonic()

        junk = open_from(JUNK, d.port, 300)  # never writes a byte
        self.socks += junk
        slow = open_from(SLOW, d.port, 20)  # half a request each
        self.socks += slow
        for sock in slow:
            sock.sendall(b"\x00\xce")  # the first two of a VALIDATE's five bytes
        wait_for(lambda: count_closed(junk) >= 300 - 96, 10, "the connections over the cap")

        wait_for(lambda: count_closed(slow) == 20, 10, "the half-sent requests to be closed")
        self.assertGreaterEqual(time.monotonic() - started, 1.5, "closed before the deadline")
        # Silent connections past the deadline are kept (a PyTorch 1.13 client's watch
        # connection never writes), and served when they speak at last.
        self.assertEqual(count_closed(junk), 300 - 96)
        late = [sock for sock in junk if not closed(sock)][0]
        late.sendall(MODERN_VALIDATE + b"\x0d" + struct.pack("<I", 7))
        self.assertEqual(struct.unpack("<I", recv_exact(late, 4))[0], 7)

        self.assert_torch_client_works(d.port)

        a = self.agent("a", "127.0.0.4", d.port, "limits-job", [TORCH_WORKER])
        b = self.agent("b", "127.0.0.5", d.port, "limits-job", [TORCH_WORKER])
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("allreduce rank", a.stdout() + b.stdout())

        # The daemon waited for events: a few hundred sockets cost it little CPU.
        cpu = cpu_seconds(d.proc.pid) - cpu_before
        print("\ndaemon CPU with the junk held (%.1f s): %.2f s" % (time.monotonic() - started, cpu),
              file=sys.stderr)
        self.assertLess(cpu, 1.0)
        err, refused = self.stop_and_count(d, r"refused a connection from %s" % re.escape(JUNK))
        self.assertEqual(refused, 1, err)  # 204 refusals, one line (rate limited)
        self.assertIn("--max-connections-per-peer", err)
        slow_lines = re.findall(r"closed a connection from %s: no complete request" %
                                re.escape(SLOW), err)
        self.assertEqual(len(slow_lines), 1, err)


class DescriptorTest(LimitsCase):
    def test_out_of_descriptors_does_not_spin_and_silent_ones_stay(self):
        if not has_torch():
            self.skipTest("no PyTorch for " + PYTHON)
        d = self.daemon("--first-request-timeout", "1")
        # Lower the running daemon's limit below its caps (derived from 256 at start), so the
        # accept loop itself meets EMFILE.
        resource.prlimit(d.proc.pid, resource.RLIMIT_NOFILE, (48, 48))
        cpu_before = cpu_seconds(d.proc.pid)
        # Established connections (each completed a request): never closed for idling.
        busy = open_from(JUNK, d.port, 80)
        self.socks += busy
        for sock in busy:
            try:
                sock.sendall(MODERN_VALIDATE + b"\x0d" + struct.pack("<I", 5))
            except OSError:
                pass  # already shed
        # Each one ends either shed (closed) or served (its PING answered).
        wait_for(lambda: all(closed(sock) or answered(sock) for sock in busy), 10,
                 "every connection shed or served")
        self.assertGreaterEqual(count_closed(busy), 80 - 48)
        held = [sock for sock in busy if not closed(sock)]
        for sock in held:
            self.assertEqual(struct.unpack("<I", recv_exact(sock, 4))[0], 5)
        # More attempts while full: each is taken off the backlog and closed; nothing spins.
        more = open_from(JUNK, d.port, 40)
        self.socks += more
        wait_for(lambda: count_closed(more) == 40, 10, "connections shed while full")
        self.assertEqual(count_closed(held), 0)
        cpu = cpu_seconds(d.proc.pid) - cpu_before
        print("\ndaemon CPU at the descriptor limit: %.2f s" % cpu, file=sys.stderr)
        self.assertLess(cpu, 1.0)

        # Silent connections instead: the ones accepted are kept past their deadline, the
        # overflow is shed (no silent one is closed to make room), and a kept one that speaks
        # late is served.
        for sock in held:
            sock.close()
        fds = "/proc/%d/fd" % d.proc.pid
        wait_for(lambda: len(os.listdir(fds)) < 20, 10, "the daemon to close the held ones")
        silent = open_from(JUNK, d.port, 60)
        self.socks += silent
        time.sleep(1.5)  # the point: let the 1 s first-request deadline pass
        # Newcomers at the limit are shed; no silent connection is closed for them.
        extra = open_from(JUNK, d.port, 10)
        self.socks += extra
        wait_for(lambda: count_closed(extra) == 10, 10, "the newcomers to be shed")
        for sock in silent:
            try:
                sock.sendall(MODERN_VALIDATE + b"\x0d" + struct.pack("<I", 9))
            except OSError:
                pass  # shed
        wait_for(lambda: all(closed(sock) or answered(sock) for sock in silent), 10,
                 "every silent connection shed or served")
        kept = [sock for sock in silent if not closed(sock)]
        self.assertGreater(len(kept), 0)
        self.assertGreater(len(silent) - len(kept), 0)
        for sock in kept:
            self.assertEqual(struct.unpack("<I", recv_exact(sock, 4))[0], 9)
        # Their descriptors come back when they close: a real client works again.
        for sock in silent:
            sock.close()
        self.assert_torch_client_works(d.port)
        err, lines = self.stop_and_count(d, r"refused a connection from %s: the process is out "
                                         r"of file descriptors" % re.escape(JUNK))
        self.assertEqual(lines, 1, err)


class StoreAllowTest(LimitsCase):
    def test_store_operations_only_from_the_listed_network(self):
        d = self.daemon("--store-allow", "127.0.0.1/32,::1")
        # From outside: the handshake and PING (no key) are answered, a SET closes the
        # connection, twice, with one log line.
        for _ in range(2):
            [c] = open_from(JUNK, d.port, 1)
            self.socks.append(c)
            c.sendall(MODERN_VALIDATE + b"\x0d" + struct.pack("<I", 77))
            self.assertEqual(struct.unpack("<I", recv_exact(c, 4))[0], 77)
            c.sendall(b"\x01" + s("/k") + s("v"))
            wait_for(lambda: closed(c), 5, "the store operation from outside to be refused")
        # From inside: served.
        [c] = open_from("127.0.0.1", d.port, 1)
        self.socks.append(c)
        c.sendall(MODERN_VALIDATE + b"\x01" + s("/k") + s("v") + b"\x03" + s("/k"))
        self.assertEqual(recv_exact(c, 9), struct.pack("<Q", 1) + b"v")
        if has_torch():
            self.assert_torch_client_works(d.port)
        err, lines = self.stop_and_count(d, r"closed a connection from %s: TCPStore operations "
                                         r"are allowed from 127\.0\.0\.1/32,::1/128 only"
                                         % re.escape(JUNK))
        self.assertEqual(lines, 1, err)

    def test_agents_join_from_outside_the_list(self):
        # No local address is listed: the agents' native requests and PINGs still pass.
        d = self.daemon("--store-allow", "192.0.2.0/24", nofile=1024)
        mode = {"MODE": "ok"}
        a = self.agent("a", "127.0.0.4", d.port, "outside-job", ["--no-python", OK_WORKER], mode)
        b = self.agent("b", "127.0.0.5", d.port, "outside-job", ["--no-python", OK_WORKER], mode)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        err, lines = self.stop_and_count(d, "--store-allow")
        self.assertEqual(lines, 0, err)

    def test_bad_list_is_one_line(self):
        out = subprocess.run([DAEMON, "--store-allow", "10.0.0.0/33"], capture_output=True,
                             text=True, timeout=10)
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stderr.count("\n"), 1, out.stderr)
        self.assertIn("'10.0.0.0/33' is not an IP address or network", out.stderr)


class WorkerStoreBindTest(LimitsCase):
    def listening(self, pid):
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=10)
        return [line.split()[3] for line in out.stdout.splitlines() if "pid=%d," % pid in line]

    def test_worker_store_listens_on_the_advertised_address_only(self):
        d = self.daemon(nofile=1024)
        a = self.agent("a", "127.0.0.4", d.port, "bind-job", ["--no-python", FLAG_WORKER])
        b = self.agent("b", "127.0.0.5", d.port, "bind-job", ["--no-python", FLAG_WORKER])
        wait_for(lambda: len([f for f in os.listdir(self.tmp) if f.startswith("started.")]) == 2,
                 30, "both workers to start")
        for agent, addr in ((a, "127.0.0.4"), (b, "127.0.0.5")):
            local = self.listening(agent.proc.pid)
            self.assertTrue(local, "no listening socket of the agent")
            for endpoint in local:
                self.assertTrue(endpoint.startswith(addr + ":"), local)
        wait_for(lambda: "MASTER=" in a.stdout() + b.stdout(), 30, "a worker's line")
        master = re.search(r"MASTER=(\S+)", a.stdout() + b.stdout()).group(1)
        self.assertIn(master.rsplit(":", 1)[0], ("127.0.0.4", "127.0.0.5"))
        open(os.path.join(self.tmp, "flag"), "w").close()
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())


class EmbeddedLimitsTest(LimitsCase):
    """ddprun's own flags: the servers an agent hosts (its c10d rendezvous daemon and the
    workers' store) enforce the same limits as ddp-rendezvous."""

    def test_ddprun_flags_limit_the_servers_it_hosts(self):
        port = free_port()
        env = dict(os.environ, MARK_DIR=self.tmp, FLAG=os.path.join(self.tmp, "flag"))
        args = [DDPRUN, "--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-id", "embedded-limits",
                "--rdzv-conf", FAST_CONF, "--shutdown-timeout", "5",
                "--max-connections", "40", "--max-connections-per-peer", "8",
                "--first-request-timeout", "1", "--store-allow", "127.0.0.1/32",
                "--no-python", FLAG_WORKER]
        a = OutputProcess(self.tmp, "a", args, env, timeout=90)
        self.procs.append(a)
        # The worker's line, not its mark file: the line reaches a.stdout() through the agent's
        # output relay, which may come after the file (seen on a loaded machine: empty output).
        wait_for(lambda: re.search(r"MASTER=\S+:\d+ ", a.stdout()), 30, "the worker's line")
        master = re.search(r"MASTER=\S+:(\d+) ", a.stdout()).group(1)
        started = time.monotonic()
        for target in (port, int(master)):
            junk = open_from(JUNK, target, 20)
            self.socks += junk
            wait_for(lambda: count_closed(junk) >= 12, 10, "connections over the per-peer cap")
            self.assertEqual(count_closed(junk), 12)
            [slow] = open_from(SLOW, target, 1)
            self.socks.append(slow)
            slow.sendall(b"\x00\xce")  # part of a VALIDATE
            wait_for(lambda: closed(slow), 10, "the half-sent request to be closed")
            # A TCPStore operation from outside --store-allow closes its connection.
            [outside] = open_from(SLOW, target, 1)
            self.socks.append(outside)
            outside.sendall(MODERN_VALIDATE + b"\x01" + s("/k") + s("v"))
            wait_for(lambda: closed(outside), 5, "the store operation from outside")
        self.assertGreaterEqual(time.monotonic() - started, 0.9, "closed before the deadline")
        # The job is untouched.
        self.assertTrue(a.proc.poll() is None, a.stderr())
        open(os.path.join(self.tmp, "flag"), "w").close()
        self.assertEqual(a.wait(), 0, a.stderr())
        err = a.stderr()
        refused = re.findall(r"refused a connection from %s" % re.escape(JUNK), err)
        self.assertEqual(len(refused), 2, err)  # once per server, rate limited
        self.assertIn("--max-connections-per-peer", err)

    def test_agent_raises_its_open_file_limit_and_workers_keep_theirs(self):
        # Started with a soft limit of 256 (hard 4096): the agent's servers get caps from 4096,
        # its workers get 256 back.
        env = dict(os.environ, MARK_DIR=self.tmp, FLAG=os.path.join(self.tmp, "flag"))
        # prlimit sets the limits and execs ddprun: same pid.
        args = ["prlimit", "--nofile=256:4096", DDPRUN, "--nproc-per-node", "1", "--no-python",
                FLAG_WORKER]
        a = OutputProcess(self.tmp, "a", args, env, timeout=90)
        self.procs.append(a)
        wait_for(lambda: "NOFILE=" in a.stdout(), 30, "the worker's line")  # relayed: see above
        self.assertIn("NOFILE=256", a.stdout())
        with open("/proc/%d/limits" % a.proc.pid) as f:
            row = [line.split() for line in f if line.startswith("Max open files")][0]
        self.assertEqual(row[3:5], ["4096", "4096"], row)
        # 300 connections from one address to the workers' store: none refused (caps of a
        # 256 limit would refuse 204). The PING answered on one more connection shows every
        # earlier accept has been handled.
        master = int(re.search(r"MASTER=\S+:(\d+)", a.stdout()).group(1))
        many = open_from(JUNK, master, 300)
        self.socks += many
        [c] = open_from("127.0.0.1", master, 1)
        self.socks.append(c)
        c.sendall(MODERN_VALIDATE + b"\x0d" + struct.pack("<I", 77))
        self.assertEqual(struct.unpack("<I", recv_exact(c, 4))[0], 77)
        self.assertEqual(count_closed(many), 0)
        open(os.path.join(self.tmp, "flag"), "w").close()
        self.assertEqual(a.wait(), 0, a.stderr())

    def test_bad_values_are_one_line(self):
        for flags, text in ((["--max-connections", "5", "--max-connections-per-peer", "9"],
                             "exceeds --max-connections 5"),
                            (["--first-request-timeout", "soon"], "--first-request-timeout"),
                            (["--store-allow", "10.0.0.0/33"], "is not an IP address or network")):
            out = subprocess.run([DDPRUN] + flags + ["--no-python", "/bin/true"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertEqual(out.stderr.count("\n"), 1, out.stderr)
            self.assertIn(text, out.stderr)


if __name__ == "__main__":
    DAEMON = sys.argv.pop(1)
    DDPRUN = sys.argv.pop(1)
    import testmain
    testmain.main()
