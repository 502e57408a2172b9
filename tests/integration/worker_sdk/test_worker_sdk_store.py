"""The C++ worker SDK's process group set-up with real processes and sockets: the store (hosted
by rank 0, or the agent's with PyTorch's exact key paths), Python and C++ ranks in one job, a
bad environment named, and the torchelastic error file of an uncaught exception.

Usage: test_worker_sdk_store.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [--torch2-build DIR] [--torch214-build DIR] [unittest args]
"""
import json
import os
import subprocess
import sys
import time

import sdk_case
from sdk_case import SdkCase, free_port, worker_env
import torch_python  # noqa: E402  (sdk_case put testlib on the path)

ARGS = None
TORCH2_STORE = """
import datetime, os, signal
from torch.distributed import TCPStore
s = TCPStore("127.0.0.1", 0, int(os.environ["WORLD"]), True, datetime.timedelta(seconds=60),
             wait_for_workers=False, use_libuv=False)
print(s.port, flush=True)
signal.pause()
"""
TORCH2_READ = """
import datetime, json, sys
from torch.distributed import TCPStore
s = TCPStore("127.0.0.1", int(sys.argv[1]), is_master=False,
             timeout=datetime.timedelta(seconds=30), use_libuv=False)
print(json.dumps([s.get(k).decode() if s.check([k]) else None for k in sys.argv[2:]]))
"""


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
        # The probe is built against LibTorch 1.13, so its Python peer runs 1.13: the two
        # versions' init_process_group lay out the store keys differently (_torch2 below).
        python = torch_python.python_for(self, "1")
        store = self.agent_store(3)
        py = self.start([python, ARGS.python_rank],
                        worker_env(0, 3, store.port, agent_store=True))
        cpp = [self.start([ARGS.probe, "allreduce"], worker_env(r, 3, store.port, agent_store=True))
               for r in (1, 2)]
        self.finish_all([py] + cpp)
        for w in [py] + cpp:
            self.assertEqual(json.loads(w.seen[-1])["sum"], 6.0)

    # The SDK built against LibTorch 2.x in a Debian root (2.6: trixie, 2.14: sid; both without
    # libuv) joins a job through an agent's store served by that PyTorch, as under ddprun or
    # torchrun 2.x.
    def test_torch2_cpp_ranks_join_through_the_agent_store(self):
        self.cpp_ranks_join_through_the_agent_store("2")

    def test_torch214_cpp_ranks_join_through_the_agent_store(self):
        self.cpp_ranks_join_through_the_agent_store("2.14")

    def cpp_ranks_join_through_the_agent_store(self, v):
        python = torch_python.python_for(self, v)
        probe = self.torch2_probe(v)
        port = self.torch2_agent_store(python, 3)
        ws = [self.start([*probe, "allreduce"], worker_env(r, 3, port, agent_store=True))
              for r in range(3)]
        self.finish_all(ws)
        for r, w in enumerate(ws):
            self.assertEqual(json.loads(w.seen[-1]), {"rank": r, "world": 3, "sum": 6.0,
                                                      "restart": 0})

    # test_python_and_cpp_ranks_share_one_job on 2.x: a Python rank of PyTorch 2.x (env://, 2.x's
    # key layout) and two ranks of the SDK built against the same LibTorch, through a 2.x agent
    # store, restart 1 (2.x puts no attempt prefix in front of the keys). First with
    # TORCH_DIST_INIT_BARRIER=1, where the Python rank waits in init_process_group until all
    # three ranks have counted themselves in 2.x's barrier key; then without (2.x's default: no
    # barrier, so no barrier key).
    def test_python_and_cpp_ranks_share_one_job_torch2(self):
        self.python_and_cpp_ranks_share_one_job("2")

    def test_python_and_cpp_ranks_share_one_job_torch214(self):
        self.python_and_cpp_ranks_share_one_job("2.14")

    def python_and_cpp_ranks_share_one_job(self, v):
        barrier = "default_pg/store_based_barrier_key:0"
        old_keys = ["/worker/attempt_1/" + barrier,
                    "/worker/attempt_1/default_pg/store_based_barrier_key:1"]
        python, port = self.mixed_torch2_job(v, {"TORCH_DIST_INIT_BARRIER": "1"})
        self.assertEqual(self.torch2_store_values(
            python, port, [barrier, barrier + ":last_worker", *old_keys]), ["3", "1", None, None])
        python, port = self.mixed_torch2_job(v, {})
        self.assertEqual(self.torch2_store_values(python, port, [barrier, *old_keys]),
                         [None, None, None])

    def mixed_torch2_job(self, v, extra):
        """Python rank 0 (PyTorch `v`) and C++ ranks 1 and 2 (the SDK built against it)
        all-reduce through a fresh agent store of that PyTorch at restart 1; returns the
        interpreter and the store's port."""
        python = torch_python.python_for(self, v)
        probe = self.torch2_probe(v)
        port = self.torch2_agent_store(python, 3)
        env = [worker_env(r, 3, port, agent_store=True, restart=1, extra=extra) for r in range(3)]
        py = self.start([python, ARGS.python_rank], env[0])
        cpp = [self.start([*probe, "allreduce"], env[r]) for r in (1, 2)]
        self.finish_all([py] + cpp)
        for r, w in enumerate([py] + cpp):
            self.assertEqual(json.loads(w.seen[-1]), {"rank": r, "world": 3, "sum": 6.0,
                                                      "restart": 1})
        return python, port

    def torch2_agent_store(self, python, world):
        """Port of a PyTorch 2.x TCPStore server (in its root) standing in for the agent's."""
        server = self.start([python, "-c", TORCH2_STORE], dict(os.environ, WORLD=str(world)))
        return int(server.wait_line(r"^\d+$"))

    def torch2_store_values(self, python, port, keys):
        """The values of keys in the 2.x store at port (None where a key is missing)."""
        read = subprocess.run([python, "-c", TORCH2_READ, str(port), *keys], capture_output=True,
                              text=True, timeout=sdk_case.DEADLINE)
        self.assertEqual(read.returncode, 0, read.stderr)
        return json.loads(read.stdout)

    def torch2_probe(self, v):
        """The sdk_probe command built against LibTorch `v` ("2" or "2.14") in its root, run
        there (scripts/torch2-run, scripts/torch214-run). Built here in the build folder CTest
        root_build_trixie or root_build_sid configured and filled (only sdk_probe.cc
        compiles, once); skipTest when that build is missing."""
        build, test, run = {"2": (ARGS.torch2_build, "root_build_trixie", "torch2-run"),
                            "2.14": (ARGS.torch214_build, "root_build_sid",
                                     "torch214-run")}[v]
        if not build or not os.path.isfile(os.path.join(build, "build.ninja")):
            self.skipTest(f"no LibTorch {v} build of the SDK at {build or '(none given)'}; "
                          f"CTest {test} makes it")
        run = os.path.join(torch_python.CHECKOUT, "scripts", run)
        built = subprocess.run([run, "cmake", "--build", build, "--target", "sdk_probe"],
                               cwd=build, capture_output=True, text=True, timeout=900)
        self.assertEqual(built.returncode, 0, built.stdout[-3000:] + built.stderr[-3000:])
        return [run, os.path.join(build, "bin", "sdk_probe")]

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
