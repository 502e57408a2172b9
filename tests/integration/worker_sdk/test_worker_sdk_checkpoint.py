"""Checkpoints of the C++ worker SDK with real PyTorch, both ways (interop_probe is the C++
half): a C++ checkpoint loads in Python bit for bit, a Python (DDP) checkpoint resumes in C++
and trains on bit for bit, and one of another architecture is refused naming the key. The same
both ways with PyTorch 2.x of the Debian 13 root (scripts/torch2-python; Skipped without it):
torch.load's 2.x defaults (weights_only=True) and torch.save's 2.x files.

Usage: test_worker_sdk_checkpoint.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [unittest args]
"""
import collections
import json
import os
import subprocess
import sys

import torch

import sdk_case
from sdk_case import SdkCase

ARGS = None
TORCH2_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                             "scripts", "torch2-python")
TORCH2_ROOT = os.environ.get("DDP_TORCH2_ROOT", "/var/lib/ddprun/trixie")

# Run under PyTorch 2.x: the model, training steps and hexes of py_net/py_train/hexes below.
TORCH2_COMMON = """
import json, sys, collections, torch
def py_net():
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.ReLU(),
                               torch.nn.Linear(5, 2))
def hexes(state):
    return {k: v.detach().contiguous().numpy().tobytes().hex() for k, v in state.items()}
"""
# argv: DIR. torch.load with 2.x defaults (weights_only=True, nothing passed).
TORCH2_LOAD = TORCH2_COMMON + """
net = py_net()
net.load_state_dict(torch.load(sys.argv[1] + "/model.pt"))
ckpt = torch.load(sys.argv[1] + "/ckpt.pt")
resumed = py_net()
resumed.load_state_dict(ckpt["model_state_dict"])
opt = torch.optim.SGD(resumed.parameters(), lr=0.5)
opt.load_state_dict(ckpt["optimizer_state_dict"])
print(json.dumps({"version": torch.__version__, "model": hexes(net.state_dict()),
                  "lr": opt.param_groups[0]["lr"], "epoch": ckpt["epoch"],
                  "momentum": [opt.state[p]["momentum_buffer"].numpy().tobytes().hex()
                               for p in resumed.parameters()]}))
"""
# argv: PATH. Three SGD steps as py_train, saved as a DDP model is (torch.save's 2.x defaults).
TORCH2_SAVE = TORCH2_COMMON + """
torch.manual_seed(3)
net = py_net()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for k in range(3):
    opt.zero_grad()
    net(torch.linspace(-1, 1, 48).view(8, 6) * (k + 1)).pow(2).mean().backward()
    opt.step()
ddp_state = collections.OrderedDict(("module." + k, v) for k, v in net.state_dict().items())
torch.save({"model_state_dict": ddp_state, "optimizer_state_dict": opt.state_dict(), "epoch": 3},
           sys.argv[1])
print(json.dumps({"version": torch.__version__, "model": hexes(net.state_dict()),
                  "momentum": [opt.state[p]["momentum_buffer"].numpy().tobytes().hex()
                               for p in net.parameters()]}))
"""


class WorkerSdkTest(SdkCase):
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

    def torch2(self, script, *args):  # runs script under the root's PyTorch 2.x, returns its JSON
        if not os.path.exists(os.path.join(TORCH2_ROOT, "usr/lib/python3/dist-packages/torch")):
            self.skipTest(f"no PyTorch 2.x root at {TORCH2_ROOT} (scripts/debian_root.sh makes it)")
        if os.geteuid() != 0:
            self.skipTest("scripts/torch2-python needs root for chroot")
        out = subprocess.run([TORCH2_PYTHON, "-c", script, *args], cwd=self.tmp.name,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        result = json.loads(out.stdout.splitlines()[-1])
        self.assertTrue(result["version"].startswith("2."), result["version"])
        return result

    def test_cpp_checkpoint_loads_in_torch2_weights_only(self):
        code, w = self.interop("train-save", self.tmp.name)
        self.assertEqual(code, 0, w.stderr + "\n".join(w.seen))
        cpp = json.loads(w.seen[-1])
        py2 = self.torch2(TORCH2_LOAD, self.tmp.name)
        self.assertEqual(py2["model"], cpp["model"])
        self.assertEqual(py2["momentum"], cpp["momentum"])
        self.assertEqual(py2["lr"], 0.1)

    def test_torch2_checkpoint_resumes_in_cpp(self):
        path = os.path.join(self.tmp.name, "py2_ckpt.pt")
        py2 = self.torch2(TORCH2_SAVE, path)
        code, w = self.interop("resume", path, "2")
        self.assertEqual(code, 0, w.stderr + "\n".join(w.seen))
        cpp = json.loads(w.seen[-1])
        self.assertEqual(cpp["loaded"]["model"], py2["model"])
        self.assertEqual(cpp["loaded"]["momentum"], py2["momentum"])

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


if __name__ == "__main__":
    ARGS, rest = sdk_case.parse_args()
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
