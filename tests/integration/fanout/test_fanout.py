"""The launching ddprun of a multi-node job, for real: one command starts every node's agent.

SshTest: two "hosts" are network namespaces, each running a real OpenSSH server (Debian's
/usr/sbin/sshd, host and user keys generated here) on 10.<net>.1 and .2, joined to this (root)
namespace through a bridge (10.<net>.254) on which the launching ddprun hosts the rendezvous.
Every interface on the namespace side is named `fan0`, so GLOO_SOCKET_IFNAME=fan0 is right on
both hosts. Everything the test creates (namespaces, bridge, sshd, keys) is removed at the end;
without root or network namespaces the class skips itself, saying so.

PbsTest: `--launcher pbs` through fake_bin/pbsdsh, a STAND-IN for PBS Pro's pbsdsh (no PBS
server exists in Debian): `-n I -- CMD` runs CMD here, in $HOME, and exits 0 whatever the task
did, as PBS Pro's does; the nodes of PBS_NODEFILE are this host and 127.0.0.3.

Leftover processes are found by a marker variable (FANOUT_MARK=<unique>) that the agents and
workers inherit: /proc/*/environ is scanned (every namespace shares the PID namespace).

usage: test_fanout.py DDPRUN [TestClass[.test]]
"""
import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
import etcd  # noqa: E402
from procs import OutputProcess, free_port, wait_for  # noqa: E402

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_WORKER = os.path.join(HERE, "..", "multinode", "torch_allreduce.py")
WAITING_WORKER = os.path.join(HERE, "waiting_worker.py")
PYTHON = "/usr/bin/python3"
SSHD = "/usr/sbin/sshd"




def all_cmdlines():
    """(pid, command line) of every process now, arguments joined by spaces."""
    out = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            out.append((int(path.split("/")[2]), cmd))
        except (OSError, ValueError):
            pass
    return out


def marked_processes(mark):
    """(pid, cmdline, environ) of every process whose environment holds FANOUT_MARK=mark."""
    found = []
    needle = ("FANOUT_MARK=" + mark).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append((int(pid), cmd, env))
    return found




class Launcher(OutputProcess):
    def __init__(self, tmp, args, env):
        super().__init__(tmp, "launcher", [DDPRUN] + args, env, cwd=tmp, timeout=90)


class FanoutCase(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddprun-fanout-")
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.mark = "fanout-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.launchers = []

    def tearDown(self):
        for launcher in self.launchers:
            launcher.kill()
        for pid, _, _ in marked_processes(self.mark):  # never leave anything behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.tmpdir.cleanup()

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PBS_", "SLURM_", "PET_"))}
        env.update({"FANOUT_MARK": self.mark, "MARK_DIR": self.marks, "DDPRUN_PYTHON": PYTHON})
        env.update(extra)
        return env

    def start(self, args, **extra):
        launcher = Launcher(self.tmp, args, self.env(**extra))
        self.launchers.append(launcher)
        return launcher

    def assert_nothing_left(self, deadline_s=20, where=None):
        def gone():
            left = marked_processes(self.mark)
            if where is not None:
                left = [p for p in left if where(p)]
            return not left
        try:
            wait_for(gone, deadline_s, "every marked process to exit")
        except AssertionError:
            left = "\n".join("%d %s" % (pid, cmd) for pid, cmd, _ in marked_processes(self.mark))
            self.fail("processes left behind:\n" + left)

    def marks_named(self, prefix):
        return [n for n in os.listdir(self.marks) if n.startswith(prefix)]


class SshTest(FanoutCase):
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

    def test_gloo_allreduce_on_two_ssh_hosts(self):
        launcher = self.launch([], [TORCH_WORKER])
        code = launcher.wait(100)
        out, err = launcher.stdout(), launcher.stderr()
        self.assertEqual(code, 0, err + out)
        lines = re.findall(r"^\[(\S+)\] \[default(\d)\]:allreduce rank (\d) of 4 sum (\S+)$",
                           out, re.M)
        self.assertEqual(sorted(int(r) for _, _, r, _ in lines), [0, 1, 2, 3], out)
        self.assertEqual({s for _, _, _, s in lines}, {"6.0"})
        self.assertEqual({h for h, _, _, _ in lines}, set(self.addrs))
        self.assertIn("finished with exit code 0", err)
        self.assert_nothing_left()

    def test_sigint_on_the_launcher_leaves_nothing_on_either_host(self):
        launcher = self.start_waiting_job()
        # Each host runs its agent (and the agent's death watch, a fork of it).
        agents = {re.search(r"--local-addr=(\S+)", p[1]).group(1)
                  for p in marked_processes(self.mark)
                  if p[1].startswith(DDPRUN) and "--exit-on-stdin-eof" in p[1]}
        self.assertEqual(agents, set(self.addrs))
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()
        for addr in self.addrs:  # each agent heard its stdin close and stopped its workers
            self.assertRegex(launcher.stderr(), r"\[%s\] .*EOF on stdin" % re.escape(addr))

    def test_a_lost_ssh_session_ends_that_hosts_agent_and_workers(self):
        launcher = self.start_waiting_job()
        victim = self.addrs[1]
        ssh = [p for p in marked_processes(self.mark)
               if p[1].startswith("ssh ") and (" " + victim + " ") in p[1]]
        self.assertEqual(len(ssh), 1, ssh)
        os.kill(ssh[0][0], signal.SIGKILL)

        def on_victim(p):  # the agent advertises the victim; its workers carry its agent id
            return ("--local-addr=" + victim) in p[1] or \
                ("DDPRUN_AGENT_ID=" + victim + ":").encode() in p[2]
        self.assert_nothing_left(30, where=on_victim)
        # Below --nnodes' minimum the job cannot go on: everything ends, with a failure.
        code = launcher.wait(60)
        self.assertNotEqual(code, 0, launcher.stderr())
        self.assert_nothing_left()

    def test_the_job_secret_reaches_the_agents_on_stdin_never_in_argv(self):
        # The job got this far, so both agents proved the launcher's fresh secret (its daemon
        # pins the job's key and refuses agents without it).
        launcher = self.start_waiting_job()
        agents = [p for p in marked_processes(self.mark)
                  if p[1].startswith(DDPRUN) and "--exit-on-stdin-eof" in p[1]]
        self.assertTrue(agents)
        for _, cmd, env in agents:
            self.assertIn("--secret-from-stdin", cmd)
        for pid, cmd in all_cmdlines():
            self.assertIsNone(re.search(r"\b[0-9a-f]{64}\b", cmd), "%d %s" % (pid, cmd))
        for _, _, env in marked_processes(self.mark):
            self.assertNotIn(b"DDPRUN_SECRET=", env)
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()

    def test_a_sigkilled_launcher_leaves_nothing_on_either_host(self):
        # No handler runs: the kernel closes the ssh clients' stdin pipes, ssh sends EOF, and
        # every remote agent stops as if told to.
        launcher = self.start_waiting_job()
        launcher.proc.send_signal(signal.SIGKILL)
        launcher.wait(10)
        self.assert_nothing_left(40)

    def test_program_arguments_reach_the_workers_unchanged(self):
        pwned = os.path.join(self.tmp, "pwned")
        hostile = ["a b; touch %s" % pwned, "$(touch %s)" % pwned, "it's", "`touch %s`" % pwned,
                   "x\"y", "*"]
        launcher = self.launch(["--no-python"], ["/usr/bin/printf", "ARG<%s>\\n"] + hostile)
        code = launcher.wait(60)
        out = launcher.stdout()
        self.assertEqual(code, 0, launcher.stderr() + out)
        for addr in self.addrs:
            for local in ("0", "1"):
                got = re.findall(r"^\[%s\] \[default%s\]:ARG<(.*)>$" % (re.escape(addr), local),
                                 out, re.M)
                self.assertEqual(got, hostile, out)
        self.assertFalse(os.path.exists(pwned))

    def test_the_exit_code_is_the_jobs_root_cause(self):
        # Through a hostfile: slots 1 and 2 (not --nproc-per-node 2) make a world of 3. Rank 2
        # exits 7 once every rank printed (it polls their marks): the job's exit code is 7 on
        # every node and the launcher's.
        hostfile = os.path.join(self.tmp, "hosts")
        with open(hostfile, "w") as f:
            f.write("# two namespaces\n%s slots=1\n%s slots=2  # the second\n" %
                    tuple(self.addrs))
        args = self.ssh_args()
        args[0:2] = ["--hostfile", hostfile]
        script = ('echo "rank $RANK of $WORLD_SIZE"; touch "$MARK_DIR/printed.$RANK"; '
                  '[ "$RANK" = 2 ] || exit 0; '
                  'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 3 ]; do sleep 0.05; done; '
                  'exit 7')
        launcher = self.start(args + ["--no-python", "/bin/sh", "-c", script],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 7, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("finished with exit code 7", err)
        # The root-cause table once, from the launcher itself (not once per node, prefixed).
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        table = err[err.index("Root Cause (first observed failure)"):]
        self.assertRegex(table, r"rank\s+: 2 ")
        self.assertRegex(table, r"exitcode\s+: 7")
        self.assertNotRegex(err, r"\] Root Cause")
        ranks = re.findall(r"^\[(\S+)\] \[default\d\]:rank (\d) of 3$", launcher.stdout(), re.M)
        self.assertEqual(sorted(r for _, r in ranks), ["0", "1", "2"], launcher.stdout())
        self.assertEqual(sorted(h for h, _ in ranks).count(self.addrs[1]), 2, ranks)
        self.assert_nothing_left()

    def test_one_remote_host_joins_the_launchers_rendezvous(self):
        launcher = self.start(self.ssh_args(hosts=[self.addrs[1] + ":3"]) +
                              ["--no-python", "/bin/sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"'],
                              GLOO_SOCKET_IFNAME="fan0")
        code = launcher.wait(60)
        self.assertEqual(code, 0, launcher.stderr())
        lines = re.findall(r"^\[%s\] \[default\d\]:rank (\d) of 3$" % re.escape(self.addrs[1]),
                           launcher.stdout(), re.M)
        self.assertEqual(sorted(lines), ["0", "1", "2"], launcher.stdout())
        self.assertIn("finished with exit code 0", launcher.stderr())

    def test_an_etcd_job_on_two_ssh_hosts(self):
        # etcd runs on the bridge (this namespace); the launching ddprun hosts nothing: the
        # agents get --rdzv-backend etcd and etcd's endpoint, and the job's exit code and root
        # cause come from etcd's record of its end.
        try:
            store = etcd.Cluster(1, host=self.prefix + "254")
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(store.stop)
        args = self.ssh_args()
        args[args.index("--rdzv-conf") + 1] = "last_call_timeout=0.2,lease_ttl=2,join_timeout=60"
        script = ('echo "rank $RANK of $WORLD_SIZE"; touch "$MARK_DIR/printed.$RANK"; '
                  '[ "$RANK" = 3 ] || exit 0; '
                  'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 4 ]; do sleep 0.05; done; '
                  'exit 6')
        launcher = self.start(args + ["--rdzv-backend", "etcd", "--rdzv-endpoint",
                                      store.endpoints(), "--rdzv-id", "ssh-etcd",
                                      "--no-python", "/bin/sh", "-c", script],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 6, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("rendezvous through etcd %s" % store.endpoints(), err)
        self.assertNotIn("rendezvous on", err)
        for addr in self.addrs:
            self.assertRegex(err, r"\[%s\] .*joined job ssh-etcd through etcd" % re.escape(addr))
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        self.assertRegex(err[err.index("Root Cause"):], r"exitcode\s+: 6")
        ranks = re.findall(r"^\[\S+\] \[default\d\]:rank (\d) of 4$", launcher.stdout(), re.M)
        self.assertEqual(sorted(ranks), ["0", "1", "2", "3"], launcher.stdout())
        self.assertIn("/ddprun/ssh-etcd/finished", store.keys("/ddprun/ssh-etcd/"))
        self.assert_nothing_left()

    def test_an_unreachable_host_is_refused_before_anything_starts(self):
        nowhere = self.prefix + "99"  # on the bridge's subnet, but no machine has it
        launcher = self.start(self.ssh_args(hosts=[self.addrs[0], nowhere]) +
                              ["--no-python", "/bin/sh", "-c", "touch $MARK_DIR/started.$RANK"],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 2, launcher.stderr())
        err = launcher.stderr().strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("ddprun: error: cannot reach host " + nowhere), err)
        self.assertEqual(os.listdir(self.marks), [])
        self.assertEqual(launcher.stdout(), "")


class PbsTest(FanoutCase):
    BACKEND = "c10d"  # what the agents' event log names

    def setUp(self):
        super().setUp()
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        self.host = socket.gethostname()
        self.nodefile = os.path.join(self.tmp, "nodefile")
        with open(self.nodefile, "w") as f:
            f.write("%s\n%s\n127.0.0.3\n127.0.0.3\n" % (self.host, self.host))

    def pbs(self, args):
        return self.start(["--launcher", "pbs", "--nproc-per-node", "2", "--shutdown-timeout", "5",
                           "--rdzv-conf", "last_call_timeout=0.2,keep_alive_interval=0.5"] + args,
                          PBS_JOBID="77.pbs-server", PBS_NODEFILE=self.nodefile, HOME=self.home,
                          PATH=os.path.join(HERE, "fake_bin") + ":" + os.environ["PATH"])

    def test_one_agent_per_node_and_the_jobs_exit_code(self):
        # Rank 3 fails with 5 once every rank has printed (it polls their marks).
        launcher = self.pbs(["--no-python", "/bin/sh", "-c",
                             'echo "rank $RANK of $WORLD_SIZE in $(pwd -P)"; '
                             'touch "$MARK_DIR/printed.$RANK"; [ "$RANK" = 3 ] || exit 0; '
                             'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 4 ]; do '
                             'sleep 0.05; done; exit 5'])
        code = launcher.wait(60)
        out, err = launcher.stdout(), launcher.stderr()
        self.assertEqual(code, 5, err + out)  # the stand-in pbsdsh exits 0 regardless
        ranks = re.findall(r"^\[(\S+)\] \[default\d\]:rank (\d) of 4 in (.*)$", out, re.M)
        self.assertEqual(sorted(int(r) for _, r, _ in ranks), [0, 1, 2, 3], out)
        self.assertEqual({h for h, _, _ in ranks}, {self.host, "127.0.0.3"})
        self.assertEqual({d for _, _, d in ranks}, {os.path.realpath(self.tmp)})
        self.assertIn("task on node 2 exited", err)  # PBS Pro's -n: the first line of a host
        self.assert_nothing_left()

    def test_success_is_zero(self):
        launcher = self.pbs(["--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())

    def test_every_nodes_agent_appends_to_the_event_log(self):
        # --event-log reaches each node's agent as given; a relative path is relative to the
        # directory the agents start in (the launcher's); here both "nodes" share one file.
        launcher = self.pbs(["--event-log", "events.jsonl", "--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())
        with open(os.path.join(self.tmp, "events.jsonl")) as f:
            events = [json.loads(line) for line in f.read().splitlines()]  # whole lines only
        by_agent = {}
        for e in events:
            by_agent.setdefault(e["agent_pid"], []).append(e)
        self.assertEqual(len(by_agent), 2, events)  # the launcher itself writes none
        group_ranks = set()
        for lines in by_agent.values():
            self.assertEqual(lines[0]["event"], "join")
            self.assertEqual(lines[0]["backend"], self.BACKEND)
            self.assertEqual((lines[0]["min_nodes"], lines[0]["max_nodes"]), (2, 2))
            self.assertEqual(lines[-1]["event"], "finish")
            self.assertEqual(lines[-1]["exit_code"], 0)
            started = [e for e in lines if e["event"] == "workers_started"]
            self.assertEqual(len(started), 1)
            self.assertEqual(len(started[0]["workers"]), 2)
            group_ranks.add(lines[-1]["group_rank"])
        self.assertEqual(group_ranks, {0, 1})
        self.assertEqual(len({e["run_id"] for e in events}), 1)

    def test_each_job_gets_a_fresh_owner_only_secret_never_in_argv(self):
        secrets = []
        for _ in range(2):
            for name in os.listdir(self.marks):
                os.unlink(os.path.join(self.marks, name))
            launcher = self.pbs([WAITING_WORKER])
            wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                     launcher.proc.poll() is not None, 60, "4 waiting workers")
            self.assertIsNone(launcher.proc.poll(), launcher.stderr())
            files = glob.glob(os.path.join(self.tmp, ".ddprun-secret-*"))
            self.assertEqual(len(files), 1, files)
            self.assertEqual(os.stat(files[0]).st_mode & 0o077, 0)
            with open(files[0]) as f:
                secret = f.read().strip()
            self.assertRegex(secret, r"^[0-9a-f]{64}$")
            secrets.append(secret)
            for pid, cmd in all_cmdlines():
                self.assertNotIn(secret, cmd, "%d %s" % (pid, cmd))
            launcher.proc.send_signal(signal.SIGINT)
            self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
            self.assertFalse(os.path.exists(files[0]))  # removed with the launcher
            self.assert_nothing_left()
        self.assertNotEqual(secrets[0], secrets[1])

    def test_sigint_stops_every_pbsdsh_agent(self):
        launcher = self.pbs([WAITING_WORKER])
        wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                 launcher.proc.poll() is not None, 60, "4 waiting workers")
        self.assertIsNone(launcher.proc.poll(), launcher.stderr())
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()

    def test_the_launchers_daemon_serves_the_status_port(self):
        # --status-port on the launching ddprun: its daemon (the job's rendezvous) serves it.
        port = free_port()
        launcher = self.pbs(["--status-port", str(port), WAITING_WORKER])
        wait_for(lambda: len(self.marks_named("waiting.")) == 4 or
                 launcher.proc.poll() is not None, 60, "4 waiting workers")
        self.assertIsNone(launcher.proc.poll(), launcher.stderr())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/jobs")
        reply = conn.getresponse()
        self.assertEqual(reply.status, 200)
        jobs = {j["run_id"]: j for j in json.loads(reply.read())["jobs"]}
        conn.close()
        job = jobs["77.pbs-server"]
        self.assertEqual((job["state"], job["node_count"], job["world_size"]), ("running", 2, 4))
        self.assertEqual(sorted(n["group_rank"] for n in job["nodes"]), [0, 1])
        r = subprocess.run([DDPRUN, "status", "127.0.0.1:%d" % port], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("77.pbs-server", r.stdout)
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()


class PbsEtcdTest(PbsTest):
    """--launcher pbs with --rdzv-backend etcd: the agents meet in a real etcd; the launching
    ddprun starts no daemon and takes the job's end from etcd."""

    BACKEND = "etcd"
    # No daemon of the launcher's in an etcd job, so no status port to serve (docs/status.md).
    test_the_launchers_daemon_serves_the_status_port = None

    def setUp(self):
        super().setUp()
        try:
            self.store = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(self.store.stop)

    def pbs(self, args):
        return self.start(["--launcher", "pbs", "--nproc-per-node", "2", "--shutdown-timeout", "5",
                           "--rdzv-backend", "etcd", "--rdzv-endpoint", self.store.endpoints(),
                           "--rdzv-conf", "last_call_timeout=0.2,lease_ttl=2"] + args,
                          PBS_JOBID="78.pbs-server", PBS_NODEFILE=self.nodefile, HOME=self.home,
                          PATH=os.path.join(HERE, "fake_bin") + ":" + os.environ["PATH"])

    def test_each_job_gets_a_fresh_owner_only_secret_never_in_argv(self):
        # An etcd job has no daemon of the launcher's to prove anything to: no secret file.
        launcher = self.pbs(["--no-python", "/bin/true"])
        self.assertEqual(launcher.wait(60), 0, launcher.stderr())
        self.assertEqual(glob.glob(os.path.join(self.tmp, ".ddprun-secret-*")), [])

    def test_one_agent_per_node_and_the_jobs_exit_code(self):
        super().test_one_agent_per_node_and_the_jobs_exit_code()
        err = self.launchers[-1].stderr()
        self.assertIn("rendezvous through etcd " + self.store.endpoints(), err)
        self.assertNotIn("rendezvous on", err)  # no daemon on the launching host
        for host in (self.host, "127.0.0.3"):
            self.assertRegex(err, r"\[%s\] .*joined job 78.pbs-server through etcd"
                             % re.escape(host))
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        self.assertIn("/ddprun/78.pbs-server/finished", self.store.keys("/ddprun/78.pbs-server/"))


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv[1])
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
