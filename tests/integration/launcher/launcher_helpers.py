"""Shared helpers for the launcher integration tests: run the real ddprun binary with a
deadline, in a scratch directory, optionally on a fake GPU machine (DDPRUN_PROC_NVIDIA)."""
import os
import shutil
import subprocess
import tempfile
import unittest

DDPRUN = None  # set by each test script's main from argv[1]
PYTHON = "/usr/bin/python3"  # the interpreter with torch; workers run under it
DEADLINE_S = 30


class LauncherTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ddprun-launcher-it-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.marker = os.path.join(self.dir, "started")

    def fake_gpus(self, count):
        """A fake /proc/driver/nvidia with `count` GPUs; returns the env to use it."""
        root = os.path.join(self.dir, "driver", "nvidia")
        os.makedirs(os.path.join(root, "gpus"), exist_ok=True)
        for i in range(count):
            gpu = os.path.join(root, "gpus", f"0000:{i + 1:02x}:00.0")
            os.makedirs(gpu, exist_ok=True)
            with open(os.path.join(gpu, "information"), "w") as f:
                f.write("Model: Fake GPU\n")
        return {"DDPRUN_PROC_NVIDIA": root}

    def run_ddprun(self, args, env_extra=None, env_drop=()):
        env = dict(os.environ)
        for name in ("CUDA_VISIBLE_DEVICES", "DDPRUN_PROC_NVIDIA", *env_drop):
            env.pop(name, None)
        env = {k: v for k, v in env.items() if not k.startswith("PET_")}
        env["DDPRUN_PYTHON"] = PYTHON
        env.update(env_extra or {})
        return subprocess.run([DDPRUN, *args], cwd=self.dir, env=env, capture_output=True,
                              text=True, timeout=DEADLINE_S)

    def marker_command(self):
        """A --no-python program that proves it started by creating the marker file."""
        return ["--no-python", "/bin/sh", "-c", f"touch '{self.marker}'"]

    def assert_usage_error(self, result, *fragments):
        """Exit 2, one `ddprun: error:` line naming the problem, nothing on stdout, nothing
        started."""
        msg = f"rc={result.returncode}\nstdout={result.stdout!r}\nstderr={result.stderr!r}"
        self.assertEqual(result.returncode, 2, msg)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, msg)
        self.assertTrue(lines[0].startswith("ddprun: error: "), msg)
        for fragment in fragments:
            self.assertIn(fragment, lines[0], msg)
        self.assertEqual(result.stdout, "", msg)
        self.assertFalse(os.path.exists(self.marker), "the program was started: " + msg)
