"""Two real PyTorch Gloo processes rendezvous through the store server and all-reduce.

Usage: /usr/bin/python3 test_gloo_allreduce.py --server daemon --daemon PATH
With TORCHELASTIC_USE_AGENT_STORE=True every rank is a plain client of the server at
MASTER_ADDR:MASTER_PORT (keys under /worker/attempt_0), as under torchrun or ddprun.
"""

import argparse
import os
import subprocess
import sys
import time
import unittest

from raw_store import RawStore
from store_server import HERE, StoreServer, add_server_args

sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import torch_python  # noqa: E402

ARGS = None
WORLD = 2
DEADLINE_S = 90


class GlooAllReduceTest(unittest.TestCase):
    def test_two_ranks_all_reduce(self):
        python = torch_python.worker_python(self)  # the ranks' PyTorch (DDP_TEST_TORCH)
        with StoreServer(ARGS.server, ARGS.daemon) as server:
            procs = []
            for rank in range(WORLD):
                env = dict(os.environ,
                           MASTER_ADDR=server.host, MASTER_PORT=str(server.port),
                           RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                           TORCHELASTIC_USE_AGENT_STORE="True",
                           TORCHELASTIC_RESTART_COUNT="0", OMP_NUM_THREADS="1")
                procs.append(subprocess.Popen(
                    [python, os.path.join(HERE, "gloo_worker.py")], env=env,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True))
            deadline = time.monotonic() + DEADLINE_S
            outputs = []
            try:
                for rank, p in enumerate(procs):
                    out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
                    outputs.append(out)
                    sys.stderr.write(out)
                    self.assertEqual(p.returncode, 0, f"rank {rank} failed:\n{out}")
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            want = [10.0 * WORLD * (WORLD + 1) / 2 + i * WORLD for i in range(4)]
            for rank, out in enumerate(outputs):
                self.assertIn(f"rank {rank} result {want}", out)
            # Both ranks were clients of this server: each counted itself in the raw "init/"
            # key (no prefix), which the torch client ADDs when it knows the world size.
            raw = RawStore(server.host, server.port)
            try:
                self.assertEqual(raw.get(b"init/"), str(WORLD).encode())
            finally:
                raw.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_server_args(parser)
    ARGS, rest = parser.parse_known_args()
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
