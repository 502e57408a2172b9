"""Unmodified PyTorch workers (Debian python3-torch, Gloo) under the real ddprun.

usage: test_torch.py DDPRUN [unittest args]
"""
import os
import subprocess
import sys
import tempfile
import unittest

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torch_worker.py")
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import torch_python  # noqa: E402
DEADLINE_S = 120.0


class TorchTest(unittest.TestCase):
    def setUp(self):
        python = torch_python.worker_python(self)  # first: a skip leaves nothing to clean up
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_agent_torch_")
        self.env = dict(os.environ, DDPRUN_PYTHON=python, TMPDIR=self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def run_ddprun(self, *args):
        return subprocess.run([DDPRUN, *args], env=self.env, capture_output=True,
                              timeout=DEADLINE_S)

    def test_init_process_group_and_all_reduce(self):
        prefix = os.path.join(self.tmp.name, "sum_")
        r = self.run_ddprun("--standalone", "--nproc-per-node", "2", SCRIPT, prefix)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        for rank in (0, 1):
            with open(prefix + str(rank)) as f:
                self.assertEqual(f.read(), "3")  # 1 + 2

    def test_record_error_file_in_root_cause(self):
        prefix = os.path.join(self.tmp.name, "sum_")
        r = self.run_ddprun("--nproc-per-node", "2", "--shutdown-timeout", "5", SCRIPT, prefix,
                            "fail")
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1, err)  # Python exits 1 on an uncaught exception
        self.assertIn("torch_worker.py FAILED", err)
        root = err.split("Root Cause (first observed failure):")[1]
        self.assertIn("rank      : 1 (local_rank: 1)", root)
        self.assertIn("rank 1 failed on purpose after all_reduce", root)
        self.assertIn("Traceback", root)
        self.assertIn("error.json", root)


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
