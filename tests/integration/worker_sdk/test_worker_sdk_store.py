"""The C++ worker SDK's process group set-up with real processes and sockets: the store (hosted
by rank 0, or the agent's with PyTorch's exact key paths), Python and C++ ranks in one job, a
bad environment named, and the torchelastic error file of an uncaught exception.

Usage: test_worker_sdk_store.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [unittest args]
"""
import json
import os
import sys
import time

import sdk_case
from sdk_case import SdkCase, free_port, worker_env
import torch_python  # noqa: E402  (sdk_case put testlib on the path)

ARGS = None


class WorkerSdkTest(SdkCase):
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
        python = torch_python.worker_python(self)  # the Python rank's PyTorch (DDP_TEST_TORCH)
        store = self.agent_store(3)
        py = self.start([python, ARGS.python_rank],
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


if __name__ == "__main__":
    ARGS, rest = sdk_case.parse_args()
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
