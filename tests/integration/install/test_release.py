"""The release tarball (scripts/release.sh) unpacked into other Debian roots, used there with
nothing of the build machine: a two-worker job, a job with a restart, and a two-agent c10d job
on loopback. The roots of scripts/debian_root.sh: bookworm (bare: shell workers), trixie
(PyTorch 2.6 workers) and sid (PyTorch 2.14 workers), each Skipped with the reason where it is
missing. The tarball itself is checked by release.sh (glibc-only, symbols up to 2.34).

Usage: test_release.py RELEASE_DIR [TestClass]
"""
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from procs import free_port  # noqa: E402

RELEASE_DIR = None
DEADLINE_S = 240
# A worker of the PyTorch roots: a Gloo all_reduce through ddprun's agent store, then attempt 0
# of a restart test fails.
TORCH_WORKER = """
import os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size(), t
if sys.argv[1:] == ["fail-first"] and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    sys.exit(3)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "attempt",
      os.environ["TORCHELASTIC_RESTART_COUNT"], "torch", torch.__version__)
os._exit(0)
"""
# The bare root's worker: the environment a worker gets, then the same restart rule.
SHELL_WORKER = """
[ -n "$RANK" ] && [ -n "$WORLD_SIZE" ] && [ -n "$MASTER_PORT" ] || exit 9
[ "$1" = fail-first ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && exit 3
echo "rank $RANK of $WORLD_SIZE attempt $TORCHELASTIC_RESTART_COUNT"
"""


class ReleaseCase(unittest.TestCase):
    ROOT = None
    TORCH = True

    def setUp(self):
        tarballs = glob.glob(os.path.join(RELEASE_DIR, "ddprun-*-linux-x86_64.tar.gz"))
        if not tarballs:
            self.fail("no release tarball in %s (CTest release_it.build makes it)" % RELEASE_DIR)
        python = os.path.join(self.ROOT, "usr", "bin", "python3")
        if not os.access(os.path.join(self.ROOT, "bin", "sh"), os.X_OK):
            self.skipTest("no Debian root at %s (scripts/debian_root.sh makes it)" % self.ROOT)
        if self.TORCH and not os.access(python, os.X_OK):
            self.skipTest("no Python in %s (scripts/debian_root.sh makes it)" % self.ROOT)
        if not os.path.samefile(os.path.join(self.ROOT, "tmp"), "/tmp"):
            self.skipTest("/tmp is not bound inside %s (run scripts/debian_root.sh)" % self.ROOT)
        # Under /tmp, which the root shares: the same path inside and out.
        self.tmp = tempfile.mkdtemp(prefix="ddp_release_", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(self.tmp)
        (top,) = os.listdir(self.tmp)
        self.ddprun = os.path.join(self.tmp, top, "bin", "ddprun")
        self.worker = os.path.join(self.tmp, "worker")
        with open(self.worker, "w") as f:
            f.write(TORCH_WORKER if self.TORCH else SHELL_WORKER)

    def command(self, *worker_args):
        if self.TORCH:
            return ["--python", "/usr/bin/python3", self.worker, *worker_args]
        return ["--no-python", "/bin/sh", self.worker, *worker_args]

    def start(self, *args):
        argv = [shutil.which("chroot") or "/usr/sbin/chroot", self.ROOT, "/usr/bin/env", "-C", self.tmp, self.ddprun, *args]
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "TMPDIR": self.tmp}
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, env=env)

    def finish(self, *procs):
        outs = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            outs.append(out)
        for p, out in zip(procs, outs):
            self.assertEqual(p.returncode, 0, "\n---\n".join(outs))
        return "".join(outs)

    def test_version(self):
        out = self.finish(self.start("--version"))
        self.assertRegex(out, r"^ddprun \S+ \(commit \S+\)")

    def test_bad_input(self):
        # The option parser throws and catches: the unwinder runs (cmake/release/glibc_234.cc).
        p = self.start("--no-such-option", "x")
        out, _ = p.communicate(timeout=DEADLINE_S)
        self.assertEqual(p.returncode, 2, out)
        self.assertIn("unknown option --no-such-option", out)

    def test_two_workers(self):
        out = self.finish(self.start("--nproc-per-node", "2", *self.command()))
        self.assertIn("rank 0 of 2", out)
        self.assertIn("rank 1 of 2", out)

    def test_a_restart(self):
        out = self.finish(self.start("--nproc-per-node", "2", "--max-restarts", "1",
                                     *self.command("fail-first")))
        self.assertIn("rank 1 of 2 attempt 1", out)  # attempt 0 failed: each rank exited 3

    def test_two_agents_c10d(self):
        endpoint = "127.0.0.1:%d" % free_port()
        agents = [self.start("--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                             "--rdzv-endpoint", endpoint, "--rdzv-id", "release",
                             "--local-addr", addr, *self.command())
                  for addr in ("127.0.0.1", "127.0.0.2")]
        out = self.finish(*agents)
        self.assertIn("rank 0 of 2", out)
        self.assertIn("rank 1 of 2", out)


class Debian12Test(ReleaseCase):
    ROOT = "/var/lib/ddprun/bookworm"
    TORCH = False


class Debian13Test(ReleaseCase):
    ROOT = os.environ.get("DDP_TORCH2_ROOT", "/var/lib/ddprun/trixie")


class DebianSidTest(ReleaseCase):
    ROOT = os.environ.get("DDP_TORCH214_ROOT", "/var/lib/ddprun/sid")


del ReleaseCase  # only its subclasses run

if __name__ == "__main__":
    RELEASE_DIR = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main()
