"""End-to-end tests of ddprun's agent through the real `ddprun` binary.

usage: test_agent.py DDPRUN [unittest args, e.g. AgentTest.test_env]
Every wait has a deadline; every process started here is killed on the way out.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from procs import wait_for  # noqa: E402

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60.0


def wait_until(predicate, deadline_s=DEADLINE_S, what="condition"):
    wait_for(predicate, deadline_s, what)


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


class AgentTestBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_agent_it_")
        self.out = os.path.join(self.tmp.name, "out")
        self.logs = os.path.join(self.tmp.name, "logs")
        os.mkdir(self.out)
        self.procs = []
        self.pids_to_kill = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
        for pid in self.pids_to_kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.tmp.cleanup()

    def env(self, **extra):
        env = dict(os.environ)
        env.pop("OMP_NUM_THREADS", None)
        env["TMPDIR"] = self.tmp.name  # default log dirs land here
        env.update(extra)
        return env

    def args(self, nproc, mode, *mode_args, extra=()):
        return [DDPRUN, "--nproc-per-node", str(nproc), *extra, "--no-python", PYTHON, WORKER,
                self.out, mode, *[str(a) for a in mode_args]]

    def run_ddprun(self, nproc, mode, *mode_args, extra=(), env=None, timeout=DEADLINE_S):
        return subprocess.run(self.args(nproc, mode, *mode_args, extra=extra),
                              env=env or self.env(), capture_output=True, timeout=timeout)

    def start_ddprun(self, nproc, mode, *mode_args, extra=()):
        p = subprocess.Popen(self.args(nproc, mode, *mode_args, extra=extra), env=self.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(p)
        return p

    def record(self, attempt, rank):
        with open(os.path.join(self.out, "a%d_r%d.json" % (attempt, rank))) as f:
            return json.load(f)

    def wait_records(self, attempt, ranks):
        wait_until(lambda: all(os.path.exists(os.path.join(self.out, "a%d_r%d.json" % (attempt, r)))
                               for r in ranks), what="workers to start")
        return [self.record(attempt, r) for r in ranks]


class EnvTest(AgentTestBase):
    def test_every_worker_sees_torchrun_env(self):
        r = self.run_ddprun(3, "env", extra=["--log-dir", self.logs, "--max-restarts", "2"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        envs = [rec["env"] for rec in (self.record(0, i) for i in range(3))]
        self.assertEqual(sorted(e["RANK"] for e in envs), ["0", "1", "2"])
        ports = set()
        for i, e in enumerate(envs):
            self.assertEqual(e["RANK"], str(i))
            self.assertEqual(e["LOCAL_RANK"], str(i))
            self.assertEqual(e["ROLE_RANK"], str(i))
            self.assertEqual(e["GROUP_RANK"], "0")
            self.assertEqual(e["ROLE_NAME"], "default")
            self.assertEqual(e["LOCAL_WORLD_SIZE"], "3")
            self.assertEqual(e["WORLD_SIZE"], "3")
            self.assertEqual(e["GROUP_WORLD_SIZE"], "1")
            self.assertEqual(e["ROLE_WORLD_SIZE"], "3")
            self.assertEqual(e["TORCHELASTIC_RESTART_COUNT"], "0")
            self.assertEqual(e["TORCHELASTIC_MAX_RESTARTS"], "2")
            self.assertEqual(e["TORCHELASTIC_USE_AGENT_STORE"], "True")
            self.assertEqual(e["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1")
            # torchrun 2.x's set: the old name only from the hook, for a torch < 2.2 that
            # imports torch.distributed (this worker does not import torch).
            self.assertNotIn("NCCL_ASYNC_ERROR_HANDLING", e)
            self.assertEqual(e["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGINT,SIGHUP,SIGQUIT")
            self.assertEqual(e["OMP_NUM_THREADS"], "1")
            self.assertTrue(e["MASTER_ADDR"])
            ports.add(e["MASTER_PORT"])
            self.assertTrue(e["TORCHELASTIC_RUN_ID"])
            self.assertEqual(e["TORCHELASTIC_ERROR_FILE"],
                             os.path.join(os.path.abspath(self.logs), "attempt_0", str(i),
                                          "error.json"))
        self.assertEqual(len(ports), 1)
        self.assertNotEqual(ports.pop(), "0")
        self.assertEqual(len({e["TORCHELASTIC_RUN_ID"] for e in envs}), 1)
        # The one-line OMP notice, and torchrun-style prefixes on whole lines.
        err = r.stderr.decode()
        self.assertEqual(err.count("OMP_NUM_THREADS"), 1, err)
        out = r.stdout.decode().splitlines()
        for i in range(3):
            self.assertIn("[default%d]:hello from rank %d" % (i, i), out)
            self.assertIn("[default%d]:partial from rank %d" % (i, i), err.splitlines())
            with open(os.path.join(self.logs, "attempt_0", str(i), "stdout.log")) as f:
                self.assertEqual(f.read(), "hello from rank %d\n" % i)

    def test_inherited_omp_is_kept_without_notice(self):
        r = self.run_ddprun(2, "ok", env=self.env(OMP_NUM_THREADS="7"))
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(self.record(0, 1)["env"]["OMP_NUM_THREADS"], "7")
        self.assertNotIn("OMP_NUM_THREADS", r.stderr.decode())


class OutputTest(AgentTestBase):
    def test_binary_partial_redirect_and_filter(self):
        r = self.run_ddprun(2, "output", extra=["--log-dir", self.logs, "--redirects", "0:1",
                                                "--local-ranks-filter", "0,1"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        # Rank 0's stdout is redirected to its file only; rank 1's reaches the console.
        self.assertEqual(r.stdout, b"[default1]:bin\x00\xff\xfeary\n[default1]:no newline at end\n")
        with open(os.path.join(self.logs, "attempt_0", "0", "stdout.log"), "rb") as f:
            self.assertEqual(f.read(), b"bin\x00\xff\xfeary\nno newline at end")
        r = self.run_ddprun(2, "output", extra=["--tee", "3", "--local-ranks-filter", "1"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertNotIn(b"[default0]", r.stdout)
        self.assertIn(b"[default1]:no newline at end\n", r.stdout)
        # Teed output lands in the default temporary log dir, which is kept.
        logs = glob.glob(os.path.join(self.tmp.name, "torchelastic_*", "attempt_0", "0",
                                      "stdout.log"))
        self.assertEqual(len(logs), 1)

    def test_default_log_dir_without_files_is_removed(self):
        r = self.run_ddprun(2, "ok")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(glob.glob(os.path.join(self.tmp.name, "torchelastic_*")), [])


class RestartTest(AgentTestBase):
    def test_restart_after_failing_attempt(self):
        r = self.run_ddprun(2, "fail_once", 1, extra=["--max-restarts", "1"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        for attempt in (0, 1):
            for rank in (0, 1):
                env = self.record(attempt, rank)["env"]
                self.assertEqual(env["TORCHELASTIC_RESTART_COUNT"], str(attempt))
        self.assertFalse(os.path.exists(os.path.join(self.out, "a2_r0.json")))

    def test_immediate_failure_never_signals_the_agent(self):
        # Rank 0 fails at once, so its siblings get SIGTERM while they may still be between
        # fork and exec; the agent must neither see that signal nor lose the restart.
        script = ('if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then '
                  '[ "$LOCAL_RANK" = 0 ] && exit 1; exec sleep 30; fi; exit 0')
        for _ in range(10):
            r = subprocess.run([DDPRUN, "--nproc-per-node", "8", "--max-restarts", "1",
                                "--no-python", "/bin/sh", "-c", script], env=self.env(),
                               capture_output=True, timeout=20)  # a lost SIGTERM waits 30 s
            self.assertEqual(r.returncode, 0, r.stderr.decode())

    def test_restart_kills_what_left_the_failed_group(self):
        r = self.run_ddprun(2, "stray", extra=["--max-restarts", "1"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(os.path.join(self.out, "stray_pid")) as f:
            self.pids_to_kill.append(json.load(f))
        with open(os.path.join(self.out, "stray_result")) as f:
            self.assertFalse(json.load(f), "the setsid grandchild of attempt 0 outlived it")

    def test_no_restarts_left_fails_with_worker_code(self):
        r = self.run_ddprun(2, "fail_once", 1, extra=["--max-restarts", "0"])
        self.assertEqual(r.returncode, 1, r.stderr.decode())
        self.assertFalse(os.path.exists(os.path.join(self.out, "a1_r0.json")))


class TeardownTest(AgentTestBase):
    def test_survivors_sigterm_then_sigkill_after_timeout(self):
        start = time.monotonic()
        r = self.run_ddprun(3, "teardown", extra=["--shutdown-timeout", "1"])
        elapsed = time.monotonic() - start
        self.assertEqual(r.returncode, 1, r.stderr.decode())
        self.assertTrue(os.path.exists(os.path.join(self.out, "ignored_term_r2")),
                        "rank 2 never saw SIGTERM")
        self.assertGreaterEqual(elapsed, 1.0)  # rank 2 ignored SIGTERM: the grace ran out
        self.assertLess(elapsed, 15.0)
        for rank in (1, 2):
            self.assertFalse(alive(self.record(0, rank)["pid"]))
        err = r.stderr.decode()
        self.assertIn("Root Cause (first observed failure):", err)
        root = err.split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 0 (local_rank: 0)", root)
        self.assertIn("exitcode  : 1", root)


class SignalTest(AgentTestBase):
    def test_sigterm_is_forwarded_and_exit_code_is_143(self):
        p = self.start_ddprun(2, "wait")
        self.wait_records(0, [0, 1])
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=DEADLINE_S)
        self.assertEqual(p.returncode, 143)
        for rank in (0, 1):
            self.assertTrue(os.path.exists(os.path.join(self.out, "sig15_r%d" % rank)))

    def test_configured_signals_are_forwarded(self):
        for sig, extra in ((signal.SIGHUP, []),
                           (signal.SIGUSR1, ["--signals-to-handle", "SIGTERM,SIGUSR1"])):
            for name in os.listdir(self.out):
                os.remove(os.path.join(self.out, name))
            p = self.start_ddprun(2, "wait", extra=extra)
            self.wait_records(0, [0, 1])
            p.send_signal(sig)
            p.communicate(timeout=DEADLINE_S)
            self.assertEqual(p.returncode, 128 + sig)
            for rank in (0, 1):
                self.assertTrue(os.path.exists(os.path.join(self.out, "sig%d_r%d" % (sig, rank))))

    def test_second_sigint_kills_at_once(self):
        p = self.start_ddprun(2, "ignore_int", extra=["--shutdown-timeout", "60"])
        workers = [rec["pid"] for rec in self.wait_records(0, [0, 1])]
        start = time.monotonic()
        p.send_signal(signal.SIGINT)
        with self.assertRaises(subprocess.TimeoutExpired):
            p.wait(timeout=0.5)  # the workers ignore SIGINT: the first one does not end it
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=DEADLINE_S)
        self.assertEqual(p.returncode, 130)
        self.assertLess(time.monotonic() - start, 30)  # far below the 60 s grace
        for pid in workers:
            self.assertFalse(alive(pid))

    def test_sigterm_kills_grandchildren_even_escaped_ones(self):
        p = self.start_ddprun(2, "grandchild", extra=["--shutdown-timeout", "5"])
        kids = self.wait_grandchildren()
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=DEADLINE_S)
        self.assertEqual(p.returncode, 143)
        for pid in kids:
            wait_until(lambda: not alive(pid), 10, "grandchild %d to die" % pid)

    def test_sigkill_of_ddprun_leaves_no_worker_alive(self):
        p = self.start_ddprun(2, "grandchild")
        kids = self.wait_grandchildren()  # in the worker's group and escaped by setsid
        workers = [self.record(0, r)["pid"] for r in (0, 1)]
        p.kill()
        p.wait(timeout=DEADLINE_S)
        for pid in workers + kids:
            wait_until(lambda: not alive(pid), 10, "process %d to die" % pid)

    def wait_grandchildren(self):
        paths = [os.path.join(self.out, "kids_r%d.json" % r) for r in (0, 1)]
        wait_until(lambda: all(os.path.exists(x) for x in paths), what="grandchildren")
        kids = []
        for x in paths:
            with open(x) as f:
                k = json.load(f)
            kids.extend([k["same_group"], k["new_session"]])
        self.pids_to_kill.extend(kids)
        return kids


class FailureReportTest(AgentTestBase):
    def test_worker_exit_code_is_ddprun_exit_code(self):
        r = self.run_ddprun(2, "exit", 1, 3, extra=["--shutdown-timeout", "5"])
        self.assertEqual(r.returncode, 3, r.stderr.decode())
        err = r.stderr.decode()
        self.assertIn("worker.py FAILED", err)
        root = err.split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 1 (local_rank: 1)", root)
        self.assertIn("exitcode  : 3 (pid: %d)" % self.record(0, 1)["pid"], root)

    def test_killed_worker_gives_137_and_signal_name(self):
        r = self.run_ddprun(2, "selfkill", 0)
        self.assertEqual(r.returncode, 137, r.stderr.decode())
        root = r.stderr.decode().split("Root Cause (first observed failure):")[1]
        self.assertIn("exitcode  : -9 (pid: %d)  (SIGKILL)" % self.record(0, 0)["pid"], root)
        self.assertIn("traceback : Signal 9 (SIGKILL) received by PID", root)
        self.assertIn("rank      : 0 (local_rank: 0)", root)

    def test_error_file_written_by_a_c_style_worker(self):
        r = self.run_ddprun(2, "errorfile", 1, 5, extra=["--log-dir", self.logs])
        self.assertEqual(r.returncode, 5, r.stderr.decode())
        root = r.stderr.decode().split("Root Cause (first observed failure):")[1]
        self.assertIn("CUDA out of memory in layer 7 (written by a C worker)", root)
        self.assertIn(os.path.join("attempt_0", "1", "error.json"), root)


    def test_program_that_cannot_execute_exits_127_with_reason(self):
        prog = os.path.join(self.tmp.name, "bad_interpreter.sh")
        with open(prog, "w") as f:
            f.write("#!/nonexistent/interpreter\n")
        os.chmod(prog, 0o755)
        r = subprocess.run([DDPRUN, "--nproc-per-node", "2", "--no-python", prog], env=self.env(),
                           capture_output=True, timeout=DEADLINE_S)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 127, err)
        self.assertIn("cannot run '%s': No such file or directory" % prog, err)


class TwoJobsTest(AgentTestBase):
    def test_two_standalone_jobs_at_once(self):
        outs = [os.path.join(self.tmp.name, "job%d" % i) for i in (0, 1)]
        procs = []
        for o in outs:
            os.mkdir(o)
            p = subprocess.Popen([DDPRUN, "--standalone", "--nproc-per-node", "2", "--no-python",
                                  PYTHON, WORKER, o, "ok"], env=self.env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.procs.append(p)
            procs.append(p)
        for p in procs:
            _, err = p.communicate(timeout=DEADLINE_S)
            self.assertEqual(p.returncode, 0, err.decode())
        envs = []
        for o in outs:
            with open(os.path.join(o, "a0_r0.json")) as f:
                envs.append(json.load(f)["env"])
        self.assertNotEqual(envs[0]["MASTER_PORT"], envs[1]["MASTER_PORT"])
        self.assertNotEqual(envs[0]["TORCHELASTIC_RUN_ID"], envs[1]["TORCHELASTIC_RUN_ID"])

    def test_a_taken_master_port_is_a_clear_error(self):
        first = self.start_ddprun(1, "wait")
        port = self.wait_records(0, [0])[0]["env"]["MASTER_PORT"]
        r = subprocess.run([DDPRUN, "--master-port", port, "--no-python", "/bin/true"],
                           env=self.env(), capture_output=True, timeout=DEADLINE_S)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--master-port %s is taken" % port, r.stderr.decode())
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=DEADLINE_S)
        self.assertEqual(first.returncode, 143)


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
