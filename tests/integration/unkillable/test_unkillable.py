"""Workers SIGKILL cannot end, for real (docs/unkillable.md): a worker blocked on a FUSE file
system whose server read the request and never answers sleeps in the kernel until the answer
comes, and SIGKILL cannot end it (state D, wait channel request_wait_answer). ddprun must
name it, fail the job without restarting, and exit; torchrun's
TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT must fail a job whose worker sits in D state. A
two-node c10d job, on loopback (PairTest) and with each node in its own network namespace
(NetnsPairTest), must end on both nodes with the stuck worker as root cause.

The test runs in a private mount namespace (the file system is seen by this process and its
children only); closing the server's /dev/fuse descriptor aborts the connection, which ends
every held request: the stuck workers die then, and this process (their subreaper) reaps them.
A passing test ends with no child left and no process of this machine seeing the mount; a
failing one too lets the file system go, kills what is left and reaps it. Needs root and
/dev/fuse (and `ip netns` for NetnsPairTest), else the tests are skipped (exit 77).

usage: test_unkillable.py DDPRUN [unittest args]
"""
import ctypes
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "stuck_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import netns  # noqa: E402
from procs import OutputProcess, free_port, poll_until, wait_for  # noqa: E402

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_CHILD_SUBREAPER = 36
FUSE_GETATTR, FUSE_INIT = 3, 26


def setUpModule():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        raise unittest.SkipTest("needs root and /dev/fuse to make a process SIGKILL cannot end")
    if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(None, b"/", None, MS_REC | MS_PRIVATE,
                                                    None) != 0:
        raise unittest.SkipTest("cannot make a private mount namespace: " +
                                os.strerror(ctypes.get_errno()))
    # Stuck workers outlive ddprun: they come back to this process, which reaps them.
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class StuckFs:
    """A FUSE file system that answers INIT and holds every other request unanswered."""

    def __init__(self, tmp):
        self.mount = os.path.join(tmp, "stuck")
        os.mkdir(self.mount)
        self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % self.fd
        if libc.mount(b"stuckfs", self.mount.encode(), b"fuse", MS_NOSUID | MS_NODEV,
                      opts.encode()) != 0:
            err = os.strerror(ctypes.get_errno())
            os.close(self.fd)
            raise unittest.SkipTest("cannot mount a FUSE file system: " + err)
        # A byte per held request (O_RDWR: opening never blocks; the "fail" worker reads).
        self.fifo = os.path.join(tmp, "held")
        os.mkfifo(self.fifo)
        self.fifo_fd = os.open(self.fifo, os.O_RDWR | os.O_CLOEXEC)
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            ready, _, _ = select.select([self.fd, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            try:
                request = os.read(self.fd, 1 << 17)
            except OSError:
                return  # the connection was aborted
            _, opcode, unique = struct.unpack_from("<IIQ", request)
            if opcode == FUSE_INIT:
                # fuse_init_out of protocol 7.31: major, minor, max_readahead, flags,
                # max_background, congestion_threshold, max_write, time_gran, max_pages,
                # map_alignment, flags2, then reserved words.
                body = struct.pack("<IIIIHHIIHHI", 7, 31, 0, 0, 0, 0, 4096, 1, 0, 0, 0)
                body += b"\0" * (64 - len(body))
                os.write(self.fd, struct.pack("<IiQ", 16 + len(body), 0, unique) + body)
            elif opcode == FUSE_GETATTR:
                os.write(self.fifo_fd, b"x")  # held: never answered

    def release(self):
        os.write(self.stop_w, b"x")
        self.thread.join()
        # The last reference to the connection: the kernel aborts it and ends every request.
        os.close(self.fd)
        libc.umount2(self.mount.encode(), MNT_DETACH)
        for fd in (self.fifo_fd, self.stop_r, self.stop_w):
            os.close(fd)


def state_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def children():
    """The pids whose parent is this process (its own children and, as their subreaper, the
    orphans of its children)."""
    me, pids = os.getpid(), []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                    pids.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return pids


def no_children_left():
    """Reaps what has died; true once this process has no child left."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        return True
    return False


def seen_by(pattern):
    """The pids of this machine's processes for which pattern(pid) holds (it reads their
    /proc/PID files; a process gone meanwhile is left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if pattern(entry):
                found.append(int(entry))
        except OSError:
            pass  # gone meanwhile
    return found


def seeing_mount(path):
    """The processes of this machine that still see a mount at path."""
    def sees(pid):
        with open("/proc/%s/mountinfo" % pid) as f:
            return any(line.split()[4] == path for line in f)
    return seen_by(sees)


def in_netns(inode):
    """The processes of this machine in the network namespace with that inode."""
    return seen_by(lambda pid: os.readlink("/proc/%s/ns/net" % pid) == "net:[%d]" % inode)


class StuckFsCase(unittest.TestCase):
    """A test with a stuck file system (self.fs) and ddprun processes started on it; whatever
    happens, its end leaves no mount and no process: the file system lets go (its stuck
    workers die), leftovers are killed, every child is reaped."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_unkillable_")
        self.fs = StuckFs(self.tmp.name)
        self.mount = self.fs.mount
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
        if self.fs is not None:
            self.fs.release()
        if not poll_until(no_children_left, 10):
            for pid in children():  # a failed test's leftovers, all of them ours
                os.kill(pid, 9)
            wait_for(no_children_left, 10, "stuck workers to die once their file system let go")
        self.tmp.cleanup()

    def start(self, name, args, prefix=(), **env):
        """ddprun ARGS over the stuck worker, run under the argv prefix (e.g. a namespace's)."""
        environment = dict(os.environ, TMPDIR=self.tmp.name, STUCK_MOUNT=self.fs.mount,
                           HELD_FIFO=self.fs.fifo, **env)
        p = OutputProcess(self.tmp.name, name, [*prefix, DDPRUN, *args, "--no-python",
                                                sys.executable, WORKER], environment,
                          timeout=60)
        self.procs.append(p)
        return p

    def run_job(self, args, **env):
        p = self.start("job", args, **env)
        started = time.monotonic()
        code = p.wait()
        return p, code, time.monotonic() - started

    def stuck_pid(self, p, local_rank):
        m = re.search(r"\[default%d\]:pid (\d+)" % local_rank, p.stdout())
        self.assertIsNotNone(m, p.stdout())
        return int(m.group(1))

    def assert_reaped_after_release(self, pid):
        """The worker outlived ddprun; once the file system lets go it dies, and is reaped;
        then no process of the machine sees the mount."""
        self.assertEqual(state_of(pid), "D")
        self.fs.release()
        self.fs = None
        wait_for(no_children_left, 10, "the stuck worker to die once its file system let go")
        self.assertIsNone(state_of(pid))
        self.assertEqual(seeing_mount(self.mount), [])


class UnkillableTest(StuckFsCase):
    def test_a_worker_sigkill_cannot_end_is_named_and_the_agent_exits(self):
        p, code, took = self.run_job(["--nproc-per-node", "2", "--max-restarts", "3",
                                      "--shutdown-timeout", "1"],
                                     ACTION_0="stat", ACTION_1="fail")
        err = p.stderr()
        pid = self.stuck_pid(p, 0)
        self.assertEqual(code, 3, err)  # the root cause is rank 1's exit 3
        self.assertRegex(err, r"worker 0 outlived SIGKILL by 15\.\d s: pid %d, state D \(disk "
                              r"sleep\), wait channel request_wait_answer" % pid)
        self.assertIn("stuck: outlived SIGKILL", err)  # in the failure table
        self.assertNotIn("round 2", err)  # no restart, though 3 were allowed
        self.assertLess(took, 40)
        self.assert_reaped_after_release(pid)

    def test_d_state_timeout_fails_the_job_without_restart(self):
        p, code, took = self.run_job(["--nproc-per-node", "1", "--max-restarts", "3",
                                      "--shutdown-timeout", "1"],
                                     ACTION_0="stat-d",
                                     TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT="1")
        err = p.stderr()
        pid = self.stuck_pid(p, 0)
        self.assertEqual(code, 128 + 9, err)  # SIGKILLed, and that is what it reports
        self.assertRegex(err, r"worker 0 in uninterruptible sleep for 1\.\d s "
                              r"\(TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT\): pid %d, state D "
                              r"\(disk sleep\), wait channel request_wait_answer" % pid)
        self.assertIn("outlived SIGKILL", err)
        self.assertIn("stuck: in uninterruptible sleep", err)  # the root-cause table
        self.assertNotIn("round 2", err)  # no restart, though 3 were allowed
        self.assertLess(took, 40)
        self.assert_reaped_after_release(pid)


class PairCase(StuckFsCase):
    """A two-node c10d job: node A's worker sleeps, node B's sits in D state (and B's agent
    has TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT=1). Subclasses place the nodes."""

    hosts = None  # netns.TwoHosts, else loopback addresses

    def prefix(self, i):
        return self.hosts.exec_prefix(i) if self.hosts else []

    def check_a_stuck_worker_on_one_node_ends_the_job_with_it_as_root_cause(self):
        port = free_port()
        addrs = self.hosts.addrs if self.hosts else ["127.0.0.2", "127.0.0.3"]
        endpoint = "%s:%d" % (addrs[0] if self.hosts else "127.0.0.1", port)
        common = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                  "--rdzv-endpoint", endpoint, "--rdzv-id", "stuck",
                  "--rdzv-conf", "last_call_timeout=0.2,join_timeout=20", "--max-restarts", "3",
                  "--shutdown-timeout", "1"]
        a = self.start("a", common + ["--local-addr", addrs[0]], self.prefix(0), ACTION_0="sleep")
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 20, "node A to host")
        b = self.start("b", common + ["--local-addr", addrs[1]], self.prefix(1),
                       ACTION_0="stat-d", TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT="1")
        self.assertEqual(b.wait(), 128 + 9, b.stderr())  # both agents exit, with its code
        self.assertEqual(a.wait(), 128 + 9, a.stderr())
        pid = self.stuck_pid(b, 0)
        # Node B names it: pid, state and wait channel, when it fails the group and when it
        # gives it up after its SIGKILL.
        self.assertRegex(b.stderr(), r"worker 0 in uninterruptible sleep for 1\.\d s "
                                     r"\(TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT\): pid %d, "
                                     r"state D \(disk sleep\), wait channel request_wait_answer"
                                     % pid)
        self.assertRegex(b.stderr(), r"worker 0 outlived SIGKILL by 15\.\d s: pid %d, state D "
                                     r"\(disk sleep\), wait channel request_wait_answer" % pid)
        for node in (a, b):  # every node's root cause names the stuck worker
            root = node.stderr().split("Root Cause")[1]
            self.assertIn("rank      : 1 (local_rank: 0)", root)
            self.assertIn("stuck: in uninterruptible sleep", root)
            self.assertIn("no restart: worker rank 1 on node", root)
            self.assertNotIn("round 2", node.stderr())  # no restart, though 3 were allowed
        self.assert_reaped_after_release(pid)


class PairTest(PairCase):
    """The nodes on loopback addresses."""

    def test_a_stuck_worker_on_one_node_ends_a_two_node_job_with_it_as_root_cause(self):
        self.check_a_stuck_worker_on_one_node_ends_the_job_with_it_as_root_cause()


class NetnsPairTest(PairCase):
    """The nodes in two network namespaces joined by a veth pair (skipped without `ip netns`):
    the stuck worker's namespace lives as long as it does; once the file system lets go, no
    process is left in either namespace, and both are removed."""

    def test_a_stuck_worker_on_one_node_ends_a_two_node_job_with_it_as_root_cause(self):
        self.hosts = netns.two_hosts_for(self, "du", ["10.233.9.2", "10.233.9.3"])
        inodes = [os.stat("/run/netns/" + ns).st_ino for ns in self.hosts.ns]
        self.check_a_stuck_worker_on_one_node_ends_the_job_with_it_as_root_cause()
        for inode in inodes:
            self.assertEqual(in_netns(inode), [])
        self.hosts.remove()
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                timeout=10).stdout
        for ns in self.hosts.ns:
            self.assertNotIn(ns, listed.split())


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
    import testmain  # noqa: E402
    DDPRUN = sys.argv[1]
    testmain.main([sys.argv[0]] + sys.argv[2:])
