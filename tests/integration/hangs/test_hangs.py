"""Hung workers under the real ddprun with real PyTorch 1.13 (Gloo) workers: detection from
heartbeats, stacks before the kill, the culprit in the root cause, restart or the documented
exit code; torchrun's file timer served to PyTorch's own FileTimerClient; no false positives;
bad input.

usage: test_hangs.py DDPRUN [--sdk-example=PATH_TO_cifar10_train] [unittest args]
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

DDPRUN = None
SDK_EXAMPLE = None
HERE = os.path.dirname(os.path.abspath(__file__))
HANG = os.path.join(HERE, "hang_worker.py")
TIMER = os.path.join(HERE, "timer_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from procs import OutputProcess, free_port, wait_for  # noqa: E402
import netns  # noqa: E402
import torch_python  # noqa: E402

HANG_EXIT = 124  # docs/hangs.md


class Base(unittest.TestCase):
    def setUp(self):
        python = torch_python.worker_python(self)  # first: a skip leaves nothing to clean up
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_hangs_")
        self.env = dict(os.environ, DDPRUN_PYTHON=python, TMPDIR=self.tmp.name)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
        self.tmp.cleanup()

    def start(self, name, args, **env):
        p = OutputProcess(self.tmp.name, name, [DDPRUN, *args], dict(self.env, **env), timeout=90)
        self.procs.append(p)
        return p


class HangRestartTest(Base):
    def test_stall_detected_with_stacks_then_the_restarted_group_finishes(self):
        beats = os.path.join(self.tmp.name, "beat_")
        p = self.start("job", ["--nproc-per-node", "2", "--hang-timeout", "3s",
                               "--max-restarts", "1", HANG],
                       HANG_RANK="1", HANG_STEP="5", BEAT_LOG=beats)
        wait_for(lambda: "hung worker(s)" in p.stderr(), 60, "the hang to be detected")
        detected = time.time()
        with open(beats + "1") as f:
            step, last_beat = f.read().split()
        self.assertEqual(step, "4")
        # Detected at the timeout after rank 1's last beat, not at twice it; the margin is for a
        # loaded machine (and this test's 20 ms polling).
        self.assertGreaterEqual(detected - float(last_beat), 3.0 - 0.05)
        self.assertLess(detected - float(last_beat), 3.0 + 2.5)
        self.assertEqual(p.wait(), 0, p.stderr())
        err = p.stderr()
        self.assertIn("rank 1 last beat at step 4", err)
        rank1 = err.split("stack of rank 1 ")[1]
        self.assertIn("time.sleep(3600)", rank1.split("stack of rank")[0])
        rank0 = err.split("stack of rank 0 ")[1]
        self.assertIn("all_reduce", rank0.split("stack of rank")[0])
        self.assertIn("restarting the worker group (restart 1 of 1)", err)
        self.assertIn("rank 0 done after 8 steps (attempt 1)", p.stdout())
        self.assertIn("rank 1 done after 8 steps (attempt 1)", p.stdout())


class HangFailTest(Base):
    def test_without_restarts_the_root_cause_names_the_stalled_rank(self):
        logs = os.path.join(self.tmp.name, "logs")
        p = self.start("job", ["--nproc-per-node", "2", "--hang-timeout", "3s", "--log-dir",
                               logs, HANG], HANG_RANK="1", HANG_STEP="5")
        self.assertEqual(p.wait(), HANG_EXIT, p.stderr())
        root = p.stderr().split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 1 (local_rank: 1)", root)
        self.assertIn("exitcode  : 124", root)
        self.assertIn("hung: rank 1 last beat at step 4", root)
        self.assertIn("the other rank here reached step 5", root)
        self.assertIn("time.sleep(3600)", root)  # the first lines of its stack
        # Every worker's stack is kept in its log directory.
        for rank, needle in ((0, "all_reduce"), (1, "time.sleep(3600)")):
            with open(os.path.join(logs, "attempt_0", str(rank), "stack.txt")) as f:
                self.assertIn(needle, f.read())


class TimerTest(Base):
    def test_pytorch_file_timer_client_expiry_kills_and_names_the_scope(self):
        p = self.start("job", ["--nproc-per-node", "2", TIMER], TORCHELASTIC_ENABLE_FILE_TIMER="1")
        code = p.wait()
        err = p.stderr()
        self.assertEqual(code, 128 + signal.SIGKILL, err)
        root = err.split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 1 (local_rank: 1)", root)
        self.assertIn("timer 'stalled_step'", root)
        self.assertIn("time.sleep(3600)", root)
        self.assertIn("rank 0 done (attempt 0)", p.stdout())

    def test_a_given_timer_file_and_signal_are_used_and_a_restart_recovers(self):
        path = os.path.join(self.tmp.name, "my_timer")
        p = self.start("job", ["--nproc-per-node", "2", "--max-restarts", "1", TIMER],
                       TORCHELASTIC_ENABLE_FILE_TIMER="1", TORCHELASTIC_TIMER_FILE=path,
                       TIMER_SIGNAL=str(int(signal.SIGTERM)))
        self.assertEqual(p.wait(), 0, p.stderr())
        self.assertIn("serving the file timer at " + path, p.stderr())
        self.assertIn("failed: signal 15 (SIGTERM)", p.stderr())
        self.assertIn("rank 1 done (attempt 1)", p.stdout())


class StackSignalTest(Base):
    # A worker the stack signal reaches when faulthandler no longer handles it (as at
    # interpreter shutdown, when faulthandler restores the disposition it found) must live on:
    # it was started with the signal ignored. Seen before: a rank exiting just as the agent took
    # the group's stacks died of signal 37 and became the job's root cause.
    SCRIPT = ("import faulthandler, os, signal\n"
              "sig = int(os.environ['DDPRUN_STACK_SIGNAL'])\n"
              "assert faulthandler.unregister(sig)\n"
              "os.kill(os.getpid(), sig)\n"
              "print('survived the stack signal', flush=True)\n")

    def test_a_worker_past_its_hook_survives_the_stack_signal(self):
        script = os.path.join(self.tmp.name, "unhooked.py")
        with open(script, "w") as f:
            f.write(self.SCRIPT)
        p = self.start("job", ["--nproc-per-node", "1", "--hang-timeout", "30s", script])
        self.assertEqual(p.wait(), 0, p.stderr())
        self.assertIn("survived the stack signal", p.stdout())


class NoFalsePositiveTest(Base):
    def test_silent_and_steady_jobs_finish_untouched(self):
        # 20 s of workers that never beat, and a job that beats every step, side by side.
        silent = self.start("silent", ["--nproc-per-node", "2", "--hang-timeout", "2s", HANG],
                            NO_BEAT="1", STEPS="100", STEP_SECONDS="0.2")
        # 5 s, not 2: after its last beat a worker still tears down (PyTorch 2.x's exit takes
        # seconds on a loaded machine); 5 s still judges a job whose beats went unread long
        # before its 10 s of steps end.
        steady = self.start("steady", ["--nproc-per-node", "2", "--hang-timeout", "5s", HANG],
                            STEPS="100", STEP_SECONDS="0.1")
        for p in (silent, steady):
            self.assertEqual(p.wait(), 0, p.stderr())
            self.assertNotIn("hung", p.stderr())
            self.assertIn("rank 1 done after 100 steps", p.stdout())


class SdkHangTest(Base):
    def test_the_cpp_sdk_beats_on_its_own_and_gdb_takes_the_stacks(self):
        if SDK_EXAMPLE is None:
            self.skipTest("the worker SDK is not built (no LibTorch): no cifar10_train")
        p = self.start("job", ["--nproc-per-node", "2", "--no-python", "--hang-timeout", "4s",
                               SDK_EXAMPLE, "--epochs", "1", "--synthetic-samples", "512",
                               "--batch-size", "32", "--stall-rank", "1", "--stall-step", "3"])
        self.assertEqual(p.wait(), HANG_EXIT, p.stderr())
        err = p.stderr()
        root = err.split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 1 (local_rank: 1)", root)
        # DDP's forward beats step 4 on rank 0; rank 1 stalled before it.
        self.assertIn("hung: rank 1 last beat at step 3", root)
        self.assertIn("the other rank here reached step 4", root)
        self.assertIn("taken with gdb", err)
        self.assertIn("nanosleep", root)  # the head of the stalled rank's stack


class NetnsHangTest(Base):
    """Two nodes in network namespaces (c10d), one worker each; the stalled rank is on the
    second node: both nodes print the same culprit and exit with the same code."""

    def test_a_stall_on_one_node_stops_both_with_the_same_root_cause(self):
        try:
            hosts = netns.TwoHosts("dh", ["10.233.4.2", "10.233.4.3"])
        except netns.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(hosts.remove)
        port = free_port()
        agents = []
        for i, addr in enumerate(hosts.addrs):
            argv = hosts.exec_prefix(i) + [
                DDPRUN, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "%s:%d" % (hosts.addrs[0], port), "--rdzv-id", "hang2",
                "--rdzv-conf", "last_call_timeout=0.2,join_timeout=30",
                "--local-addr", addr, "--hang-timeout", "3s", HANG]
            env = dict(self.env, HANG_RANK="1", HANG_STEP="5", GLOO_SOCKET_IFNAME=netns.IFNAME)
            p = OutputProcess(self.tmp.name, "node%d" % i, argv, env, timeout=90)
            self.procs.append(p)
            agents.append(p)
        for p in agents:
            self.assertEqual(p.wait(), HANG_EXIT, p.stderr())
        tables = []
        for p in agents:
            root = p.stderr().split("Root Cause (first observed failure):")[1]
            self.assertIn("rank      : 1 (local_rank: 0)", root)
            self.assertIn("hung: rank 1 last beat at step 4", root)
            self.assertIn("time.sleep(3600)", root)
            tables.append(root.split("=" * 60)[0])
        self.assertEqual(tables[0], tables[1])


class BadInputTest(Base):
    def test_bad_durations_are_refused_with_one_line(self):
        for args in (["--hang-timeout", "0"], ["--hang-timeout", "-2s"],
                     ["--hang-timeout", "soon"], ["--hang-timeout", "2s",
                                                  "--hang-first-beat-timeout", "0"],
                     ["--hang-first-beat-timeout", "10s"]):
            r = subprocess.run([DDPRUN, *args, "--no-python", "true"], env=self.env,
                               capture_output=True, timeout=30)
            err = r.stderr.decode()
            self.assertEqual(r.returncode, 2, (args, err))
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn("hang", err)

    def test_junk_on_the_heartbeat_channel_is_ignored_with_one_warning(self):
        p = self.start("job", ["--nproc-per-node", "2", "--hang-timeout", "5s", HANG], JUNK="1")
        self.assertEqual(p.wait(), 0, p.stderr())
        self.assertEqual(p.stderr().count("ignoring a heartbeat line"), 2)  # once per worker
        self.assertIn("rank 1 done after 8 steps", p.stdout())


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    for arg in list(sys.argv[1:]):
        if arg.startswith("--sdk-example="):
            SDK_EXAMPLE = os.path.abspath(arg.split("=", 1)[1])
            sys.argv.remove(arg)
    import testmain  # noqa: E402
    testmain.main()
