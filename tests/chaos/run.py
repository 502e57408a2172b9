"""One trial on real binaries: start the daemon (standalone placement) and one ddprun agent
per node, wait until every worker of the first attempt runs, inject the fault, then watch the
job to its end and check the invariants:
  - every agent exits within the bound (unless frozen: the bound counts from its resume);
  - no process of the job (its run id in /proc/*/environ) is left 10 s after its agents exit;
  - each node's exit code is one the fault's expectation allows;
  - where a worker failure is the root cause, every failing node's root-cause table names
    that worker's host and global rank;
  - after a spare took over, every rank runs on its node of before but the lost node's;
  - after a node turned slow: its event log tells its removal as a straggler, and no event log
    names a straggler that was not slow.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                                "testlib"))
from procs import free_port, poll_until  # noqa: E402
import etcd  # noqa: E402  (testlib's)

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
RUN_S = 3.0             # each attempt's workers run this long
START_BOUND_S = 40.0    # every worker of the first attempt runs by then
EXIT_BOUND_S = 45.0     # after the fault (plus any pause), every agent has exited by then
ORPHAN_BOUND_S = 10.0   # after the last agent exits, no process of the job is left by then
PACE_S = 0.1            # the straggler fault: a step's time (the slow node's: 3x)
REPLACED_BOUND_S = 30.0  # the straggler fault: the stop mark is written by then at the latest
CONF = "last_call_timeout=0.3,keep_alive_interval=0.25,keep_alive_max_attempt=4,join_timeout=30"
ETCD_CONF = ",lease_ttl=1"  # etcd placement: a frozen or cut-off node's lease lapses in ~1 s


def job_pids(run_id):
    """Pids whose environment carries TORCHELASTIC_RUN_ID=run_id (the job's workers)."""
    needle = ("TORCHELASTIC_RUN_ID=%s\0" % run_id).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle in f.read() + b"\0":
                    found.append(int(entry))
        except OSError:
            pass  # gone meanwhile, or a kernel thread
    return found


class Run:
    def __init__(self, trial, ddprun, daemon, topology):
        self.t = trial
        self.ddprun = ddprun
        self.daemon_bin = daemon
        self.topo = topology
        self.tmp = tempfile.mkdtemp(prefix="chaos-")
        self.agents = []
        self.daemon = None
        self.etcd = None  # etcd placement: the trial's etcd server
        self.pending = []  # (monotonic time, action, or sooner when this holds) from faults
        self.frozen_until = {}
        self.expect_ranks_kept = False  # spare faults: check() compares the ranks' nodes
        self.slow_since = None  # the straggler fault: the wall time the target turned slow

    # ---- what fault functions call -----------------------------------------------------
    def signal_agent(self, node, sig):
        if sig == signal.SIGSTOP:
            self.frozen_until[node] = float("inf")
        if sig == signal.SIGCONT:
            self.frozen_until[node] = time.monotonic()
        if self.agents[node].poll() is None:
            self.agents[node].send_signal(sig)

    def signal_worker(self, node, local_rank, sig):
        os.kill(self.worker(node, local_rank)[0], sig)

    def worker_exit(self, node, local_rank, code):
        with open(os.path.join(self.tmp, "exit_code"), "w") as f:
            f.write(str(code))
        self.signal_worker(node, local_rank, signal.SIGUSR1)

    def fail_again(self, node, local_rank):
        """That worker's rank exits 3 as soon as it starts in every later attempt."""
        with open(os.path.join(self.tmp, "fail_again"), "w") as f:
            f.write(str(self.worker(node, local_rank)[1]))

    def kill_daemon(self):
        self.daemon.kill()

    def link(self, node, up):
        self.topo.link(node, up)

    def after(self, seconds, action, sooner_when=None):
        self.pending.append((time.monotonic() + seconds, action, sooner_when))

    def slow_down(self, node):
        """That node's paced workers take 3x as long per step from now on (worker.py)."""
        self.slow_since = time.time()
        write_atomically(os.path.join(self.tmp, "slow"), self.topo.addr(node))

    def stop_once_replaced(self):
        """Writes the paced workers' stop mark once every rank runs in a new worker (the job
        re-formed), or after REPLACED_BOUND_S (then check() tells what went wrong)."""
        before = {self.mark(name)[0] for name in self.marks()}
        world = self.t.nodes * self.t.nproc
        self.after(REPLACED_BOUND_S,
                   lambda: write_atomically(os.path.join(self.tmp, "stop"), ""),
                   lambda: sum(self.mark(n)[0] not in before for n in self.marks()) >= world)

    # ---- the trial ------------------------------------------------------------------------
    def marks(self):
        """The names of the complete marks workers wrote: started.<restart>.<rank>."""
        return [n for n in os.listdir(self.tmp) if n.startswith("started.")
                and not n.endswith(".tmp")]

    def mark(self, name):
        """(pid, agent id, local rank) from a worker's mark."""
        pid, agent, local = open(os.path.join(self.tmp, name)).read().split()
        return int(pid), agent, int(local)

    def worker(self, node, local_rank):
        """(pid, global rank) of a first-attempt worker, from the marks workers write."""
        addr = self.topo.addr(node)
        for name in self.marks():
            if not name.startswith("started.0."):
                continue
            pid, agent, local = self.mark(name)
            if agent.startswith(addr + ":") and local == local_rank:
                return pid, int(name.split(".")[2])
        raise RuntimeError("no worker %d on node %d" % (local_rank, node))

    def start(self):
        t = self.t
        if t.placement == "standalone":
            out = os.path.join(self.tmp, "daemon.out")
            self.daemon = subprocess.Popen(
                self.topo.daemon_prefix() + [self.daemon_bin, "--host", self.topo.daemon_addr,
                                             "--port", "0"],
                stdout=open(out, "wb"), stderr=open(os.path.join(self.tmp, "daemon.err"), "wb"),
                stdin=subprocess.DEVNULL)
            def listening_port():
                m = re.search(r"listening on \S+:(\d+)\n", open(out).read())
                return int(m.group(1)) if m else None
            if not poll_until(lambda: listening_port() is not None, 10):
                raise RuntimeError("ddp-rendezvous did not start: " +
                                   open(os.path.join(self.tmp, "daemon.err")).read())
            endpoint = "%s:%d" % (self.topo.daemon_addr, listening_port())
        elif t.placement == "etcd":
            self.etcd = etcd.Cluster(1, host=self.topo.daemon_addr,
                                     prefix=self.topo.daemon_prefix())
            endpoint = self.etcd.endpoints()
        else:
            endpoint = "%s:%d" % (self.topo.addr(0), free_port())
        env = dict(os.environ, CHAOS_DIR=self.tmp, CHAOS_RUN_S=str(RUN_S),
                   CHAOS_TORCH="1" if t.torch else "0")
        if self.topo.ifname:
            env["GLOO_SOCKET_IFNAME"] = self.topo.ifname
        if t.straggler:
            env["CHAOS_PACE_S"] = str(PACE_S)
        self.endpoint, self.env = endpoint, env
        for n in range(t.nodes):
            self.start_agent(n)

    def start_agent(self, n):
        t = self.t
        conf = CONF + (ETCD_CONF if t.placement == "etcd" else "")
        if t.placement == "embedded":
            conf += ",is_host=%s" % ("true" if n == 0 else "false")
        argv = self.topo.prefix(n) + [
            self.ddprun, "--nnodes", t.nnodes, "--nproc-per-node", str(t.nproc),
            "--rdzv-backend", "etcd" if t.placement == "etcd" else "c10d",
            "--rdzv-endpoint", self.endpoint, "--rdzv-id", t.run_id,
            "--rdzv-conf", conf, "--local-addr", self.topo.addr(n),
            "--max-restarts", str(t.restarts), "--shutdown-timeout", "3",
            "--event-log", self.path(n, "events")]
        if t.no_progress:
            argv += ["--max-no-progress-restarts", str(t.no_progress)]
        if t.straggler:
            argv += ["--straggler-reports", "3", "--exclude-straggler"]
        argv += ["--no-python", PYTHON, "-u", os.path.join(HERE, "worker.py")]
        self.agents.append(subprocess.Popen(
            argv, env=self.env, stdin=subprocess.DEVNULL,
            stdout=open(self.path(n, "out"), "wb"), stderr=open(self.path(n, "err"), "wb")))

    def rank_nodes(self):
        """Global rank -> the address of the node whose worker last started with it."""
        latest = {}
        for name in self.marks():
            _, restart, rank = name.split(".")
            agent = self.mark(name)[1]
            if int(restart) >= latest.get(int(rank), (-1, ""))[0]:
                latest[int(rank)] = (int(restart), agent.rsplit(":", 1)[0])
        return {rank: addr for rank, (_, addr) in latest.items()}

    def path(self, node, stream):
        return os.path.join(self.tmp, "node%d.%s" % (node, stream))

    def stderr(self, node):
        with open(self.path(node, "err"), errors="replace") as f:
            return f.read()

    def events(self, node, kind):
        """The `kind` lines of that node's event log."""
        try:
            with open(self.path(node, "events")) as f:
                return [e for e in (json.loads(line) for line in f) if e["event"] == kind]
        except FileNotFoundError:
            return []

    def first_attempt_running(self):
        return sum(n.startswith("started.0.") for n in self.marks()) == \
            self.t.nodes * self.t.nproc

    def execute(self, inject):
        """Runs the trial; returns (violations, seconds from the fault to the last process
        of the job gone, or None)."""
        self.start()
        if not poll_until(lambda: self.first_attempt_running() or
                        any(a.poll() is not None for a in self.agents), START_BOUND_S):
            return ["the workers did not all start within %.0f s" % START_BOUND_S], None
        if not self.first_attempt_running():
            return ["an agent exited before the fault: " + self.summary()], None
        if self.t.spare:  # the extra agent joins at MAX: a spare, told it waits
            self.start_agent(self.t.nodes)
            if not poll_until(lambda: "(waiting" in self.stderr(self.t.nodes) or
                              self.agents[-1].poll() is not None, START_BOUND_S):
                return ["the spare did not join within %.0f s" % START_BOUND_S], None
            self.first_ranks = self.rank_nodes()
        pid, rank = self.worker(self.t.target, self.t.local_rank)
        self.target_worker = (self.topo.addr(self.t.target), rank)
        time.sleep(self.t.delay_s)  # the point: the fault lands at a drawn moment of the run
        fault_at = time.monotonic()
        expect = inject(self, self.t)
        violations, exited_at = self.watch(fault_at)
        gone_at = self.wait_orphans(violations)
        violations += self.check(expect)
        last = max([gone_at] + list(exited_at.values())) if gone_at else None
        return violations, (last - fault_at) if last else None

    def watch(self, fault_at):
        """Runs the actions faults scheduled, and waits for every agent, within the bound."""
        bound_at = fault_at + EXIT_BOUND_S + max((p[0] - fault_at for p in self.pending),
                                                 default=0)
        exited_at, violations = {}, []
        while len(exited_at) < len(self.agents):
            now = time.monotonic()
            for item in [p for p in self.pending if p[0] <= now or (p[2] and p[2]())]:
                self.pending.remove(item)
                item[1]()
            for n, a in enumerate(self.agents):
                if n not in exited_at and a.poll() is not None:
                    exited_at[n] = now
            if now > bound_at:
                for n, a in enumerate(self.agents):
                    if n not in exited_at:
                        violations.append("node %d's agent still ran %.0f s after the fault "
                                          "(and its end)" % (n, EXIT_BOUND_S))
                        a.send_signal(signal.SIGCONT)
                        a.kill()
                        a.wait()
                        exited_at[n] = time.monotonic()
                break
            time.sleep(0.02)  # agents are our children but Popen offers no wait on several
        for item in self.pending:  # e.g. a link still down: restore it
            item[1]()
        self.pending = []
        return violations, exited_at

    def wait_orphans(self, violations):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait()
        if poll_until(lambda: not job_pids(self.t.run_id), ORPHAN_BOUND_S, period_s=0.05):
            return time.monotonic()
        left = job_pids(self.t.run_id)
        violations.append("processes of the job left %.0f s after its agents exited: %s"
                          % (ORPHAN_BOUND_S, describe_pids(left)))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return None

    def check(self, expect):
        violations = []
        for n, a in enumerate(self.agents):
            code = a.returncode
            if code not in expect.codes[n]:
                violations.append("node %d exited with %s, expected %s; its last lines: %s"
                                  % (n, code, sorted(expect.codes[n]), self.tail(n)))
            if expect.root and code != 0:
                named = root_cause(self.stderr(n))
                if named != self.target_worker:
                    violations.append("node %d's root-cause table names %s, expected host %s "
                                      "rank %d" % ((n, named) + self.target_worker))
        if self.expect_ranks_kept:
            lost, spare = self.topo.addr(self.t.target), self.topo.addr(self.t.nodes)
            want = {r: spare if a == lost else a for r, a in self.first_ranks.items()}
            if self.rank_nodes() != want:
                violations.append("ranks by node after the spare took over: %s, expected %s"
                                  % (self.rank_nodes(), want))
        if self.slow_since is not None:
            violations += self.check_stragglers()
        return violations

    def check_stragglers(self):
        """The slow node was removed as a straggler, and only its ranks, once slow, were
        flagged (an event's time is whole milliseconds: hence the slack)."""
        violations = []
        slow = {r for r, a in self.first_ranks.items() if a == self.topo.addr(self.t.target)}
        removed = [e for e in self.events(self.t.target, "straggler")
                   if e["removed"] and e["rank"] in slow]
        if not removed:
            violations.append("the slow node %d's event log has no straggler event removing "
                              "one of its ranks %s" % (self.t.target, sorted(slow)))
        if not any("persistent straggler" in e["reason"]
                   for e in self.events(self.t.target, "lost")):
            violations.append("the slow node %d's event log has no `lost` event naming a "
                              "persistent straggler" % self.t.target)
        for n in range(len(self.agents)):
            for e in self.events(n, "straggler"):
                if n != self.t.target or e["rank"] not in slow or \
                        e["ts_unix"] < self.slow_since - 0.01:
                    violations.append("node %d flagged rank %d, which was not slow (node %d's "
                                      "ranks %s from %.3f): %s" % (
                                          n, e["rank"], self.t.target, sorted(slow),
                                          self.slow_since, e))
        return violations

    def tail(self, node, lines=3):
        return " | ".join(self.stderr(node).strip().splitlines()[-lines:])

    def summary(self):
        return "; ".join("node %d: %s" % (n, a.poll()) for n, a in enumerate(self.agents))

    def cleanup(self):
        for a in self.agents:
            if a.poll() is None:
                a.send_signal(signal.SIGCONT)
                a.kill()
                a.wait()
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        if self.etcd is not None:
            self.etcd.stop()
        for pid in job_pids(self.t.run_id):  # after a violation, or an interrupted trial
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def remove_files(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def root_cause(stderr):
    """(host address, global rank) from the root-cause table's section, or None."""
    section = stderr.split("Root Cause (first observed failure):", 1)
    if len(section) < 2:
        return None
    host = re.search(r"host\s*:\s*(\S+?):\d+\n", section[1])
    rank = re.search(r"rank\s*:\s*(\d+)", section[1])
    return (host.group(1), int(rank.group(1))) if host and rank else None


def describe_pids(pids):
    out = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                out.append("%d (%s)" % (pid, f.read().replace(b"\0", b" ").decode()[:60]))
        except OSError:
            out.append(str(pid))
    return ", ".join(out)


def write_atomically(path, text):
    """Readers see the whole file or none."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
