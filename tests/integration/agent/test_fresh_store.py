"""PyTorch workers on every build (issue 30), with 1.13 (/usr/bin/python3) and 2.x (the
Debian 13 root of scripts/torch2_root.sh, run through scripts/torch2-python):
 - LibuvTest: a PyTorch built without libuv (Debian 13's 2.6) joins ddprun's store unchanged
   (init_process_group(init_method="env://") + all_reduce), and the hook that makes it so
   imports nothing in a worker that does not use torch.
The 2.x variants report Skipped with the reason when the root is missing or torch does not
import there.

usage: test_fresh_store.py DDPRUN [unittest args]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from agents import AgentsCase  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "attempt_worker.py")
TORCH2 = os.path.normpath(os.path.join(HERE, "..", "..", "..", "scripts", "torch2-python"))
TORCH2_ROOT = os.environ.get("DDP_TORCH2_ROOT", "/var/lib/ddprun/trixie")
DEADLINE_S = 120.0
_torch2_missing = []


def torch2_missing():
    """Why PyTorch 2.x workers cannot run here, or None when they can (checked once)."""
    if not _torch2_missing:
        why = None
        if not os.path.isdir(os.path.join(TORCH2_ROOT, "usr")):
            why = "no PyTorch 2.x root at %s (scripts/torch2_root.sh makes it)" % TORCH2_ROOT
        else:
            p = subprocess.run([TORCH2, "-c", "import torch"], cwd="/tmp", capture_output=True,
                               text=True, timeout=120)
            if p.returncode != 0:
                why = "torch does not import in %s: %s" % (TORCH2_ROOT, p.stderr.strip()[-300:])
        _torch2_missing.append(why)
    return _torch2_missing[0]


class FreshStoreCase(AgentsCase):
    """A temporary directory under /tmp (bound inside the root, so 2.x workers see the worker
    copied there and the same paths); ddprun runs with it as its working directory."""
    AGENT_TIMEOUT_S = DEADLINE_S

    def setUp(self):
        super().setUp()
        # Under /tmp, which the root shares (the checkout may not be bound there).
        self.tmpdir.cleanup()
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_fresh_store_", dir="/tmp")
        self.tmp = self.tmpdir.name
        self.worker = shutil.copy(WORKER, self.tmp)

    def python(self, version):
        if version == "1.13":
            return "/usr/bin/python3"
        why = torch2_missing()
        if why:
            self.skipTest(why)
        return TORCH2

    def env(self):
        env = dict(os.environ, TMPDIR=self.tmp)
        env.pop("XDG_RUNTIME_DIR", None)  # ddprun's runtime directory in /dev/shm, seen inside
        return env

    def ddprun(self, name, version, args, last):
        argv = [DDPRUN, "--python", self.python(version), "--shutdown-timeout", "5", *args,
                self.worker, self.tmp, str(last)]
        agent = self.spawn(name, argv, self.env())
        return agent

    def check_attempts(self, agents, last):
        for a in agents:
            try:
                code = a.wait()
            except subprocess.TimeoutExpired:
                code = "still running after %d s" % DEADLINE_S
            self.assertEqual(code, 0, a.stderr()[-4000:])
        marks = set(os.listdir(self.tmp))
        missing = ["attempt_%d_rank_%d" % (n, r) for n in range(last + 1) for r in (0, 1)
                   if "attempt_%d_rank_%d" % (n, r) not in marks]
        self.assertEqual(missing, [])
        self.assertIn("ok", marks)


class LibuvTest(FreshStoreCase):
    def check_join(self, version):
        a = self.ddprun("a", version, ["--nproc-per-node", "2"], 0)
        self.check_attempts([a], 0)

    def test_torch113(self):
        self.check_join("1.13")

    def test_torch2_without_libuv(self):
        self.check_join("2")

    def test_hook_imports_nothing(self):
        probe = os.path.join(self.tmp, "probe.py")
        with open(probe, "w") as f:
            f.write("import sys\nassert 'torch' not in sys.modules, 'torch imported'\n"
                    "assert not any(p.startswith('/dev/shm/ddprun-') for p in sys.path), "
                    "sys.path\n")
        a = self.spawn("a", [DDPRUN, "--python", "/usr/bin/python3", probe], self.env())
        self.assertEqual(a.wait(), 0, a.stderr())


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main()
