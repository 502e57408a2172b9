"""The Python examples (examples/python/) under the real ddprun with real PyTorch (Gloo):
2 workers on one node, a torch.distributed.launch-era script, two nodes on loopback, and a
worker killed mid-run with --max-restarts 1 resuming from the checkpoint. Usage:
    test_examples.py DDPRUN [TestClass]
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from procs import OutputProcess, free_port, wait_for  # noqa: E402
import torch_python  # noqa: E402

DDPRUN = None
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples", "python")
TRAIN = os.path.join(EXAMPLES, "train_ddp.py")
LEGACY = os.path.join(EXAMPLES, "launch_legacy.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def children(pid):
    """The processes whose parent is pid, read from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry))
    return out


def environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            items = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)


class ExampleCase(unittest.TestCase):
    def setUp(self):
        self.env = dict(ENV, DDPRUN_PYTHON=torch_python.worker_python(self))  # first: may skip
        self.tmpdir = tempfile.TemporaryDirectory()
        self.tmp = self.tmpdir.name
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
        self.tmpdir.cleanup()

    def ddprun(self, name, args, timeout=150):
        p = OutputProcess(self.tmp, name, [DDPRUN] + args, self.env, timeout=timeout)
        self.procs.append(p)
        return p

    def succeeds(self, p):
        try:
            rc = p.wait()
        except subprocess.TimeoutExpired:
            self.fail("still running after %d s:\n%s%s" % (p.timeout, p.stderr(), p.stdout()))
        self.assertEqual(rc, 0, p.stderr() + p.stdout())
        return p.stdout()

    @staticmethod
    def epochs(text):
        return [int(e) for e in re.findall(r"epoch (\d+) loss \S+ val accuracy", text)]


class TrainTest(ExampleCase):
    def test_two_workers_rank0_logs_and_a_plain_model_loads_the_checkpoint(self):
        ck = os.path.join(self.tmp, "ck.pt")
        out = self.succeeds(self.ddprun("job", ["--nproc-per-node", "2", TRAIN, "--epochs", "3",
                                                "--checkpoint", ck]))
        self.assertIn("world size 2, backend gloo, restart 0", out)
        self.assertEqual(self.epochs(out), [0, 1, 2])  # logged once: by rank 0 only
        self.assertIn("loads into a plain model", out)
        accuracy = float(re.findall(r"val accuracy (\S+)", out)[-1])
        self.assertGreater(accuracy, 0.5)  # 4 classes: chance is 0.25
        # A second run finds the finished checkpoint and has nothing left to train.
        again = self.succeeds(self.ddprun("again", ["--nproc-per-node", "2", TRAIN, "--epochs",
                                                    "3", "--checkpoint", ck]))
        self.assertIn("at epoch 3", again)
        self.assertEqual(self.epochs(again), [])


class LegacyLaunchTest(ExampleCase):
    def test_local_rank_argument_in_torch_distributed_launch_shape(self):
        # python -m torch.distributed.launch --nproc_per_node=3 --master_port=$RANDOM main.py
        #   --gpu-ids 1,6,3 (two workers here)
        out = self.succeeds(self.ddprun("job", [
            "--local-rank-arg", "underscore", "--nproc_per_node=2",
            "--master_port=%d" % free_port(), LEGACY, "--gpu-ids", "1,6"]))
        got = sorted(re.findall(r"rank (\d) local_rank (\d) gpu (\d) backend gloo sum 3", out))
        self.assertEqual(got, [("0", "0", "1"), ("1", "1", "6")], out)


class TwoNodesTest(ExampleCase):
    def test_one_worker_on_each_of_two_nodes(self):
        port = free_port()
        common = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                  "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-id", "examples",
                  "--rdzv-conf", "join_timeout=60"]
        train = [TRAIN, "--epochs", "2"]
        a = self.ddprun("a", common + ["--local-addr", "127.0.0.2"] + train)
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 20, "the host agent")
        b = self.ddprun("b", common + ["--local-addr", "127.0.0.3"] + train)
        out = self.succeeds(a) + self.succeeds(b)
        self.assertIn("world size 2, backend gloo, restart 0", out)
        self.assertEqual(self.epochs(out), [0, 1])


class RestartTest(ExampleCase):
    def test_killed_worker_restarts_and_resumes_from_the_checkpoint(self):
        ck = os.path.join(self.tmp, "ck.pt")
        job = self.ddprun("job", ["--nproc-per-node", "2", "--max-restarts", "1", TRAIN,
                                  "--epochs", "40", "--checkpoint", ck])
        # Epoch 2 runs only after every rank passed the barrier behind checkpoint 1.
        wait_for(lambda: 2 in self.epochs(job.stdout()), 120, "epoch 2 of the first attempt")
        victims = [p for p in children(job.proc.pid) if environ(p).get("LOCAL_RANK") == "1"]
        self.assertEqual(len(victims), 1, "worker with LOCAL_RANK=1 among ddprun's children")
        os.kill(victims[0], signal.SIGKILL)
        out = self.succeeds(job)
        self.assertIn("world size 2, backend gloo, restart 1", out)
        resumed = re.search(r"resuming from \S+ at epoch (\d+)", out)
        self.assertIsNotNone(resumed, out)
        first = int(resumed.group(1))
        self.assertGreaterEqual(first, 2)
        after = out[resumed.end():]
        self.assertEqual(self.epochs(after), list(range(first, 40)))
        self.assertIn("loads into a plain model", out)


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
