"""PyTorch workers across restarts and builds, with 1.13 (/usr/bin/python3), 2.6 (the Debian 13
root of scripts/debian_root.sh, through scripts/torch2-python) and 2.14 (the sid root, through
scripts/torch214-py, whose file name does not say python):
 - LibuvTest: a PyTorch built without libuv (Debian's 2.6 and 2.14) joins ddprun's store unchanged
   (init_process_group(init_method="env://") + all_reduce), and the hook that makes it so
   imports nothing in a worker that does not use torch;
 - the restart tests: every attempt sees a store with no key of an earlier attempt. One ddprun
   run with --max-restarts N in which rank 1 exits 13 mid-training in every attempt but the
   last (attempt_worker.py); every attempt must form its group and sum right, the last must
   finish. N (RESTARTS): 20 on one node and 10 for a pair with 2.14, the newest PyTorch; 5 with
   1.13 and 2.6, whose loops have run long since (the suite's time goes to the newest). 2.x workers read whatever Gloo addresses the store holds, so a key left from an
   earlier attempt fails or hangs the group. Single node, and pairs of agents on loopback with
   c10d, etcd (Skipped without etcd) and static (node rank 0's daemon is the workers' store).
The 2.x variants report Skipped with the reason when the root is missing or torch does not
import there.

usage: test_fresh_store.py DDPRUN [unittest args]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
from agents import AgentsCase  # noqa: E402
from procs import free_port  # noqa: E402
import torch_python  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "attempt_worker.py")
# Restarts per PyTorch version ("1.13", "2" for 2.6, "2.14"): one node, a pair of nodes.
RESTARTS = {"1.13": (5, 5), "2": (5, 5), "2.14": (20, 10)}
DEADLINE_S = 240.0


class FreshStoreCase(AgentsCase):
    """A temporary directory under /tmp (bound inside the root, so 2.x workers see the worker
    copied there and the same paths); ddprun runs with it as its working directory."""
    AGENT_TIMEOUT_S = DEADLINE_S

    def setUp(self):
        super().setUp()
        # Under /tmp, which the root shares (the checkout may not be bound there).
        self.tmpdir.cleanup()
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ddp_fresh_store_", dir="/tmp")
        self.tmp = self.tmpdir.name
        self.worker = shutil.copy(WORKER, self.tmp)

    def python(self, version):
        """version: "1.13", "2" (2.6) or "2.14"; skips where that 2.x cannot run. 2.14's
        interpreter is scripts/torch214-py: --python takes a name without "python" in it."""
        return torch_python.python_for(self, "1" if version == "1.13" else version)

    def env(self):
        env = dict(os.environ, TMPDIR=self.tmp)
        env.pop("XDG_RUNTIME_DIR", None)  # ddprun's runtime directory in /dev/shm, seen inside
        return env

    def ddprun(self, name, version, args, last):
        argv = [DDPRUN, "--python", self.python(version), "--shutdown-timeout", "5", *args,
                self.worker, self.tmp, str(last)]
        agent = self.spawn(name, argv, self.env())
        return agent

    def check_attempts(self, agents, last):
        for a in agents:
            try:
                code = a.wait()
            except subprocess.TimeoutExpired:
                code = "still running after %d s" % DEADLINE_S
            self.assertEqual(code, 0, "\n".join("%s:\n%s" % (b.err_path, b.stderr()[-3000:])
                                                for b in agents))
        marks = set(os.listdir(self.tmp))
        missing = ["attempt_%d_rank_%d" % (n, r) for n in range(last + 1) for r in (0, 1)
                   if "attempt_%d_rank_%d" % (n, r) not in marks]
        self.assertEqual(missing, [])
        self.assertIn("ok", marks)


class LibuvTest(FreshStoreCase):
    def check_join(self, version):
        a = self.ddprun("a", version, ["--nproc-per-node", "2"], 0)
        self.check_attempts([a], 0)

    def test_torch113(self):
        self.check_join("1.13")

    def test_torch2_without_libuv(self):
        self.check_join("2")

    def test_torch214_without_libuv(self):
        self.check_join("2.14")

    def nccl_setting(self, version):
        """NCCL_ASYNC_ERROR_HANDLING as a worker of `version` sees it once torch.distributed is
        imported (ddprun gives TORCH_NCCL_ASYNC_ERROR_HANDLING=1 only, as torchrun 2.x)."""
        probe = os.path.join(self.tmp, "nccl_probe.py")
        with open(probe, "w") as f:
            f.write("import os, torch.distributed\n"
                    "print('nccl', os.environ.get('NCCL_ASYNC_ERROR_HANDLING'), flush=True)\n")
        a = self.spawn("a", [DDPRUN, "--python", self.python(version), probe], self.env())
        self.assertEqual(a.wait(), 0, a.stderr())
        return a.stdout()

    def test_torch113_gets_the_old_nccl_name(self):
        self.assertIn("nccl 1", self.nccl_setting("1.13"))

    def test_torch214_gets_only_the_new_nccl_name(self):
        self.assertIn("nccl None", self.nccl_setting("2.14"))

    def test_hook_imports_nothing(self):
        probe = os.path.join(self.tmp, "probe.py")
        with open(probe, "w") as f:
            f.write("import sys\nassert 'torch' not in sys.modules, 'torch imported'\n"
                    "assert not any(p.startswith('/dev/shm/ddprun-') for p in sys.path), "
                    "sys.path\n")
        a = self.spawn("a", [DDPRUN, "--python", "/usr/bin/python3", probe], self.env())
        self.assertEqual(a.wait(), 0, a.stderr())


class SingleNodeRestartTest(FreshStoreCase):
    def check_restarts(self, version):
        restarts = RESTARTS[version][0]
        a = self.ddprun("a", version,
                        ["--nproc-per-node", "2", "--max-restarts", str(restarts)], restarts)
        self.check_attempts([a], restarts)

    def test_torch113(self):
        self.check_restarts("1.13")

    def test_torch2(self):
        self.check_restarts("2")

    def test_torch214(self):
        self.check_restarts("2.14")


class PairCase(FreshStoreCase):
    """Two agents on loopback, one worker each: rank 1 is node b's."""
    A, B = "127.0.0.2", "127.0.0.3"

    def pair(self, version, rdzv, node_ranks=False, hosted=True):
        restarts = RESTARTS[version][1]
        args = ["--nnodes", "2", "--nproc-per-node", "1", "--max-restarts", str(restarts),
                "--rdzv-id", "fresh", *rdzv]
        agents = []
        for n, (name, addr) in enumerate((("a", self.A), ("b", self.B))):
            extra = ["--node-rank", str(n)] if node_ranks else []
            agents.append(self.ddprun(name, version, args + ["--local-addr", addr] + extra,
                                      restarts))
            if n == 0 and hosted:
                self.wait_hosting(agents[0])
        self.check_attempts(agents, restarts)


class C10dRestartTest(PairCase):
    def c10d(self, version):
        self.pair(version, ["--rdzv-backend", "c10d", "--rdzv-endpoint",
                            "127.0.0.1:%d" % free_port(), "--rdzv-conf",
                            "last_call_timeout=0.2,join_timeout=20"])

    def test_torch113(self):
        self.c10d("1.13")

    def test_torch2(self):
        self.c10d("2")

    def test_torch214(self):
        self.c10d("2.14")


class EtcdRestartTest(PairCase):
    def etcd(self, version):
        self.python(version)  # skips first where 2.x cannot run
        try:
            cluster = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(cluster.stop)
        self.pair(version, ["--rdzv-backend", "etcd", "--rdzv-endpoint", cluster.endpoints(),
                            "--rdzv-conf", "last_call_timeout=0.2,join_timeout=20"],
                  hosted=False)

    def test_torch113(self):
        self.etcd("1.13")

    def test_torch2(self):
        self.etcd("2")

    def test_torch214(self):
        self.etcd("2.14")


class StaticRestartTest(PairCase):
    """The static backend: node rank 0's daemon on --master-port is the workers' store."""

    def static(self, version):
        self.pair(version, ["--rdzv-backend", "static", "--master-addr", "127.0.0.1",
                            "--master-port", str(free_port()), "--rdzv-conf",
                            "join_timeout=20"], node_ranks=True)

    def test_torch113(self):
        self.static("1.13")

    def test_torch2(self):
        self.static("2")

    def test_torch214(self):
        self.static("2.14")


if __name__ == "__main__":
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main()
