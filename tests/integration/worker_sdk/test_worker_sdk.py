"""Integration tests of the C++ worker SDK with real processes, sockets and signals.

Usage: test_worker_sdk.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT [--ddprun BIN]
       [unittest args]
"""
import argparse
import collections
import datetime
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import torch
from torch.distributed import TCPStore

ARGS = None
DEADLINE = 60.0  # seconds any single worker group may take


def free_port():
    # Rank-0-hosted mode needs a port chosen before rank 0 starts: bind, read, close.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(rank, world, port, agent_store, restart=0, extra=None):
    env = dict(os.environ)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True" if agent_store else "False",
        "TORCHELASTIC_RESTART_COUNT": str(restart), "OMP_NUM_THREADS": "1",
    })
    env.update(extra or {})
    return env


class Worker:
    """A child process whose stdout lines are collected by a thread (waitable with deadlines)."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        self._stderr = []
        self._readers = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_out(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self):
        return "".join(self._stderr)

    def wait_line(self, pattern, timeout=DEADLINE):
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout}s; "
                                     f"saw {self.seen}")
            if line is None:
                raise AssertionError(f"output ended before {pattern!r}; saw {self.seen}")
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def finish(self, timeout=DEADLINE):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.proc.args} did not exit within {timeout}s")
        for t in self._readers:
            t.join(timeout)
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                self.lines.put(None)  # keep the end marker for later calls
                break
            self.seen.append(line)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class WorkerSdkTest(unittest.TestCase):
    def setUp(self):
        self.workers = []
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_sdk_it_")

    def tearDown(self):
        for w in self.workers:
            w.kill()
        self.tmp.cleanup()

    def start(self, argv, env):
        w = Worker(argv, env)
        self.workers.append(w)
        return w

    def agent_store(self, world):
        # Stands in for the agent's worker store: a PyTorch TCPStore server on a port-0 socket.
        return TCPStore("127.0.0.1", 0, world, True, datetime.timedelta(seconds=30),
                        wait_for_workers=False)

    def finish_all(self, workers):
        for w in workers:
            code = w.finish()
            self.assertEqual(code, 0, f"{w.proc.args} exited {code}\n{w.stderr}")

    def test_rank0_hosts_the_store_without_agent(self):
        port = free_port()
        ws = [self.start([ARGS.probe, "allreduce"], worker_env(r, 3, port, agent_store=False))
              for r in range(3)]
        self.finish_all(ws)
        for r, w in enumerate(ws):
            self.assertEqual(json.loads(w.seen[-1]), {"rank": r, "world": 3, "sum": 6.0,
                                                      "restart": 0})

    def test_agent_store_prefix_matches_pytorch(self):
        store = self.agent_store(2)
        ws = [self.start([ARGS.probe, "allreduce"],
                         worker_env(r, 2, store.port, agent_store=True, restart=3))
              for r in range(2)]
        self.finish_all(ws)
        self.assertEqual(json.loads(ws[1].seen[-1])["sum"], 3.0)
        # init_process_group's barrier counter, under PyTorch's exact key path.
        self.assertEqual(store.get("/worker/attempt_3/default_pg/store_based_barrier_key:1"), b"2")

    def test_python_and_cpp_ranks_share_one_job(self):
        store = self.agent_store(3)
        py = self.start([sys.executable, ARGS.python_rank],
                        worker_env(0, 3, store.port, agent_store=True))
        cpp = [self.start([ARGS.probe, "allreduce"], worker_env(r, 3, store.port, agent_store=True))
               for r in (1, 2)]
        self.finish_all([py] + cpp)
        for w in [py] + cpp:
            self.assertEqual(json.loads(w.seen[-1])["sum"], 6.0)

    def test_bad_environment_is_named(self):
        env = worker_env(0, 2, 1234, agent_store=True)
        del env["MASTER_ADDR"]
        w = self.start([ARGS.probe, "allreduce"], env)
        self.assertEqual(w.finish(), 2)
        self.assertIn("MASTER_ADDR is not set", w.stderr)

    def test_uncaught_exception_writes_torchelastic_error_file(self):
        path = os.path.join(self.tmp.name, "error.json")
        before = int(time.time())
        w = self.start([ARGS.probe, "throw"],
                       worker_env(1, 2, 1, agent_store=True,
                                  extra={"TORCHELASTIC_ERROR_FILE": path}))
        self.assertEqual(w.finish(), 1)
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual(set(doc), {"message"})
        self.assertEqual(doc["message"]["message"], "std::runtime_error: probe failure on rank 1")
        info = doc["message"]["extraInfo"]
        self.assertIn("fail_deep_inside", info["py_callstack"])  # the throw site's stack
        self.assertTrue(before <= int(info["timestamp"]) <= int(time.time()) + 1, info)
        self.assertIn("probe failure on rank 1", w.stderr)

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

    # ddp::spawn: sdk_probe spawn N WHAT, started bare (no ddprun, no worker environment).
    def spawn_probe(self, *args):
        return self.start([ARGS.probe, "spawn", *args], dict(os.environ, OMP_NUM_THREADS="1"))

    def ready_pids(self, w, count):
        return [json.loads(w.wait_line(r'"pid"'))["pid"] for _ in range(count)]

    def assert_gone(self, pids):
        for pid in pids:  # reaped by the parent before it returned: no zombie either
            with self.assertRaises(ProcessLookupError, msg=f"worker {pid} outlived the parent"):
                os.kill(pid, 0)

    def test_spawn_runs_workers_joined_through_the_parents_store(self):
        w = self.spawn_probe("3", "allreduce")
        self.assertEqual(w.finish(), 0, w.stderr)
        docs = sorted((json.loads(l) for l in w.seen), key=lambda d: d["rank"])
        self.assertEqual(docs, [{"rank": r, "world": 3, "sum": 6.0, "restart": 0} for r in range(3)])

    def test_spawn_two_node_driver_arithmetic(self):
        # The tutorials' --nodes 2 --gpus 2 --nr i driver, both "nodes" on this machine.
        port = free_port()
        nodes = [self.start([ARGS.probe, "spawn-node", "2", str(nr), str(port), "2"],
                            dict(os.environ, OMP_NUM_THREADS="1")) for nr in (0, 1)]
        for w in nodes:
            self.assertEqual(w.finish(), 0, w.stderr)
        ranks = [sorted(json.loads(l)["rank"] for l in w.seen) for w in nodes]
        self.assertEqual(ranks, [[0, 1], [2, 3]])  # rank = nr x gpus + local rank
        for w in nodes:
            self.assertTrue(all(json.loads(l)["sum"] == 10.0 and json.loads(l)["world"] == 4
                                for l in w.seen), w.seen)

    def test_spawn_first_failure_stops_the_others(self):
        w = self.spawn_probe("3", "fail", "1", "7")
        pids = self.ready_pids(w, 3)
        self.assertEqual(w.finish(), 7, w.stderr)
        self.assertRegex(w.stderr, r"ddp::spawn: rank 1 \(local rank 1, pid \d+\) exited with code 7; "
                                   r"stopped the other workers")
        self.assert_gone(pids)

    def test_spawn_worker_killed_by_a_signal(self):
        w = self.spawn_probe("2", "signal", "1", str(int(signal.SIGKILL)))
        pids = self.ready_pids(w, 2)
        self.assertEqual(w.finish(), 128 + signal.SIGKILL, w.stderr)
        self.assertRegex(w.stderr, r"rank 1 \(local rank 1, pid \d+\) was killed by signal 9")
        self.assert_gone(pids)

    def test_spawn_ctrl_c_on_the_parent_stops_every_worker(self):
        w = self.spawn_probe("2", "hang")
        pids = self.ready_pids(w, 2)
        w.proc.send_signal(signal.SIGINT)
        self.assertEqual(w.finish(), 128 + signal.SIGINT, w.stderr)
        self.assertIn("ddp::spawn: interrupted by signal 2 (Interrupt); stopped the workers", w.stderr)
        self.assert_gone(pids)

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

    # Checkpoints with real PyTorch, both ways (interop_probe is the C++ half).
    @staticmethod
    def py_net():
        return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(),
                                   torch.nn.Linear(5, 2))

    @staticmethod
    def py_train(net, opt, first, last):  # interop_probe's steps
        for k in range(first, last):
            opt.zero_grad()
            net(torch.linspace(-1, 1, 48).view(8, 6) * (k + 1)).pow(2).mean().backward()
            opt.step()

    @staticmethod
    def hexes(state):
        return {k: v.detach().contiguous().numpy().tobytes().hex() for k, v in state.items()}

    def interop(self, *args):
        w = self.start([ARGS.interop, *args], dict(os.environ, OMP_NUM_THREADS="1"))
        return w.finish(), w

    def test_cpp_checkpoint_loads_in_python_bit_for_bit(self):
        code, w = self.interop("train-save", self.tmp.name)
        self.assertEqual(code, 0, w.stderr + "\n".join(w.seen))
        cpp = json.loads(w.seen[-1])
        net = self.py_net()
        net.load_state_dict(torch.load(os.path.join(self.tmp.name, "model.pt")))
        self.assertEqual(self.hexes(net.state_dict()), cpp["model"])
        ckpt = torch.load(os.path.join(self.tmp.name, "ckpt.pt"))
        resumed = self.py_net()
        resumed.load_state_dict(ckpt["model_state_dict"])
        opt = torch.optim.SGD(resumed.parameters(), lr=0.5)
        opt.load_state_dict(ckpt["optimizer_state_dict"])
        self.assertEqual(opt.param_groups[0]["lr"], 0.1)
        buffers = [opt.state[p]["momentum_buffer"] for p in resumed.parameters()]
        self.assertEqual([b.numpy().tobytes().hex() for b in buffers], cpp["momentum"])
        self.py_train(resumed, opt, ckpt["epoch"], ckpt["epoch"] + 1)  # Python trains on

    def test_python_checkpoint_resumes_in_cpp(self):
        torch.manual_seed(3)
        net = self.py_net()
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        self.py_train(net, opt, 0, 3)
        # As the tutorials save a DDP model: names carry "module.", an OrderedDict.
        ddp_state = collections.OrderedDict(("module." + k, v) for k, v in net.state_dict().items())
        path = os.path.join(self.tmp.name, "py_ckpt.pt")
        torch.save({"model_state_dict": ddp_state, "optimizer_state_dict": opt.state_dict(),
                    "epoch": 3}, path)
        code, w = self.interop("resume", path, "2")
        self.assertEqual(code, 0, w.stderr + "\n".join(w.seen))
        cpp = json.loads(w.seen[-1])
        self.assertEqual(cpp["loaded"]["model"], self.hexes(net.state_dict()))
        self.assertEqual(cpp["loaded"]["momentum"],
                         [opt.state[p]["momentum_buffer"].numpy().tobytes().hex()
                          for p in net.parameters()])
        torch.set_num_threads(1)  # as the C++ side (OMP_NUM_THREADS=1): the same kernels
        self.py_train(net, opt, 3, 5)  # the same two steps in Python
        self.assertEqual(cpp["trained"], self.hexes(net.state_dict()))  # bit for bit

    def test_checkpoint_of_another_architecture_is_refused_naming_the_key(self):
        path = os.path.join(self.tmp.name, "wide.pt")
        torch.save(torch.nn.Sequential(torch.nn.Linear(6, 7), torch.nn.BatchNorm1d(7),
                                       torch.nn.ReLU(), torch.nn.Linear(7, 2)).state_dict(), path)
        code, w = self.interop("load", path)
        self.assertEqual(code, 1)
        self.assertEqual(w.seen, [f"{path}: size mismatch for '0.weight': the checkpoint has [7, 6], "
                                  "the model [5, 6]"])
        torch.save({"0.weight": torch.zeros(5, 6)}, path)
        code, w = self.interop("load", path)
        self.assertEqual(w.seen, [f"{path}: missing key '0.bias' in the checkpoint (model shape [5])"])

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
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--train", required=True)
    parser.add_argument("--interop", required=True)
    parser.add_argument("--python-rank", required=True)
    parser.add_argument("--ddprun", default="")
    ARGS, rest = parser.parse_known_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
