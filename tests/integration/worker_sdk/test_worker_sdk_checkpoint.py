"""Checkpoints of the C++ worker SDK with real PyTorch, both ways (interop_probe is the C++
half): a C++ checkpoint loads in Python bit for bit, a Python (DDP) checkpoint resumes in C++
and trains on bit for bit, and one of another architecture is refused naming the key.

Usage: test_worker_sdk_checkpoint.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [unittest args]
"""
import collections
import json
import os
import sys

import torch

import sdk_case
from sdk_case import SdkCase

ARGS = None


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
