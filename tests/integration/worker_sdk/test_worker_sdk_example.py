"""The example trainer (cifar10_train) built on the C++ worker SDK, with real processes and
signals: it learns on two workers, reads the CIFAR-10 binary format, resumes from its
checkpoint after a worker is killed (the test playing the agent, and under ddprun with
--max-restarts), spawns its own workers whose files Python reads, and learns with bf16
autocast and gradients.

Usage: test_worker_sdk_example.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [unittest args]
"""
import collections
import os
import re
import signal
import sys

import torch

import sdk_case
from sdk_case import SdkCase, free_port, worker_env

ARGS = None


class WorkerSdkTest(SdkCase):
    def train_argv(self, *extra):
        return [ARGS.train, "--epochs", "3", "--synthetic-samples", "2048", "--batch-size", "32",
                *extra]

    def test_example_learns_on_two_workers(self):
        store = self.agent_store(2)
        ws = [self.start(self.train_argv(), worker_env(r, 2, store.port, agent_store=True))
              for r in range(2)]
        self.finish_all(ws)
        epochs = [l for l in ws[0].seen if l.startswith("epoch ")]
        self.assertFalse(any(l.startswith("epoch ") for l in ws[1].seen))  # rank 0 prints
        self.assert_learned(epochs)

    def assert_learned(self, epochs):
        self.assertEqual(len(epochs), 3, epochs)
        stats = [re.match(r"epoch \d/3 loss ([\d.]+) accuracy ([\d.]+) samples/s ([\d.]+)", l)
                 for l in epochs]
        losses = [float(m.group(1)) for m in stats]
        self.assertLess(losses[-1], 0.7 * losses[0], epochs)
        self.assertGreater(float(stats[-1].group(2)), 0.5, epochs)

    def test_example_reads_cifar10_binary_format(self):
        data = os.path.join(self.tmp.name, "cifar")
        os.makedirs(data)
        rng = __import__("random").Random(1)
        for b in (1, 2):
            with open(os.path.join(data, f"data_batch_{b}.bin"), "wb") as f:
                for _ in range(128):
                    label = rng.randrange(10)
                    f.write(bytes([label]) + bytes([(label * 25 + rng.randrange(8)) % 256] * 3072))
        store = self.agent_store(2)
        ws = [self.start(self.train_argv("--data", data), worker_env(r, 2, store.port, True))
              for r in range(2)]
        self.finish_all(ws)
        self.assertIn("training on 256 samples", ws[0].seen[0])
        with open(os.path.join(data, "data_batch_3.bin"), "wb") as f:
            f.write(b"\x01" * 100)
        bad = self.start(self.train_argv("--data", data), worker_env(0, 1, free_port(), False))
        self.assertNotEqual(bad.finish(), 0)
        self.assertIn("not a multiple of the 3073-byte CIFAR-10 record", bad.stderr)

    def test_killed_worker_resumes_from_checkpoint(self):
        # The test plays the agent: kill a worker mid-epoch, stop the group, start attempt 1.
        ckpt = os.path.join(self.tmp.name, "ckpt")
        argv = self.train_argv("--checkpoint-dir", ckpt, "--checkpoint-every", "8")
        store = self.agent_store(2)
        first = [self.start(argv, worker_env(r, 2, store.port, True, restart=0)) for r in range(2)]
        first[0].wait_line(r"^checkpoint epoch 2 step 8$")
        first[1].proc.send_signal(signal.SIGKILL)
        first[0].proc.send_signal(signal.SIGTERM)
        self.assertEqual(first[1].finish(), -signal.SIGKILL)
        self.assertNotEqual(first[0].finish(), 0)
        second = [self.start(argv, worker_env(r, 2, store.port, True, restart=1)) for r in range(2)]
        self.finish_all(second)
        out = second[0].seen
        self.assertRegex(out[0], r"^resumed from .*checkpoint\.pt at epoch 2 step (8|16|24)$")
        self.assertEqual([l.split()[1] for l in out if l.startswith("epoch ")], ["2/3", "3/3"])

    def test_example_spawns_its_workers_and_python_reads_its_files(self):
        ckpt = os.path.join(self.tmp.name, "ckpt")
        final = os.path.join(self.tmp.name, "final.pt")
        w = self.start(self.train_argv("--spawn", "2", "--checkpoint-dir", ckpt, "--save-model", final),
                       dict(os.environ))
        self.assertEqual(w.finish(), 0, w.stderr)
        self.assertIn("2 workers", w.seen[0])
        self.assert_learned([l for l in w.seen if l.startswith("epoch ")])
        doc = torch.load(os.path.join(ckpt, "checkpoint.pt"))
        self.assertEqual((doc["epoch"], doc["world_size"], len(doc["rng_states"])), (3, 2, 2))
        model = torch.load(final)
        self.assertEqual(set(doc["model_state_dict"]), set(model))
        self.assertIn("block1.conv1.weight", model)
        self.assertFalse(any(k.startswith("module.") for k in model))
        params = [t.clone() for k, t in model.items() if "running_" not in k and "num_batches" not in k]
        opt = torch.optim.SGD(params, lr=1.0)
        opt.load_state_dict(doc["optimizer_state_dict"])  # Python's own layout
        self.assertEqual(opt.param_groups[0]["momentum"], 0.9)
        # Back from Python (an OrderedDict, as state_dict() gives): the example starts from it.
        py_file = os.path.join(self.tmp.name, "from_python.pt")
        torch.save(collections.OrderedDict(model), py_file)
        again = self.start([ARGS.train, "--spawn", "1", "--epochs", "1", "--synthetic-samples", "256",
                            "--batch-size", "32", "--init-from", py_file], dict(os.environ))
        self.assertEqual(again.finish(), 0, again.stderr)
        self.assertIn(f"initialised from {py_file}", again.seen)
        epoch = [re.match(r"epoch 1/1 loss [\d.]+ accuracy ([\d.]+)", l) for l in again.seen]
        accuracy = float([m for m in epoch if m][0].group(1))
        self.assertGreater(accuracy, 0.5, again.seen)  # trained weights (fresh: about 0.1)

    def test_example_bf16_autocast_and_gradients_learn(self):
        w = self.start(self.train_argv("--spawn", "2", "--autocast", "bf16", "--grad-dtype", "bf16",
                                       "--width", "8"), dict(os.environ))
        self.assertEqual(w.finish(timeout=120), 0, w.stderr)
        self.assertRegex(w.seen[1], r"^gradients as bf16, \d+ bytes sent per step per worker; "
                                    r"autocast bf16$")
        self.assert_learned([l for l in w.seen if l.startswith("epoch ")])

    def test_under_ddprun_sigkill_and_max_restarts(self):
        if not ARGS.ddprun:
            self.skipTest("pass --ddprun BIN (CMake does when the ddprun target exists)")
        ckpt = os.path.join(self.tmp.name, "ckpt")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        run = self.start([ARGS.ddprun, "--nproc-per-node", "2", "--max-restarts", "1", "--no-python",
                          *self.train_argv("--checkpoint-dir", ckpt, "--checkpoint-every", "8")],
                         env)
        run.wait_line(r"checkpoint epoch 2 step 8")
        victim = find_worker(run.proc.pid, rank=1)
        os.kill(victim, signal.SIGKILL)
        code = run.finish(timeout=120)
        self.assertEqual(code, 0, "\n".join(run.seen) + run.stderr)
        text = "\n".join(run.seen)
        self.assertRegex(text, r"resumed from .*checkpoint\.pt at epoch 2 step (8|16|24)")
        self.assertIn("epoch 3/3", text)


def find_worker(launcher_pid, rank):
    """The pid of the launcher's descendant worker process with RANK=rank."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    todo, found = [launcher_pid], []
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            todo.append(child)
            try:
                with open(f"/proc/{child}/environ", "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            except OSError:
                continue
            if env.get(b"RANK") == str(rank).encode():
                found.append(child)
    if not found:
        raise AssertionError(f"no worker with RANK={rank} under pid {launcher_pid}")
    return min(found)


if __name__ == "__main__":
    ARGS, rest = sdk_case.parse_args()
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
