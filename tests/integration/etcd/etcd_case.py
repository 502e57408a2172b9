"""What the etcd integration tests share: real etcd members and real ddprun agents on this
machine, each agent advertising its own loopback address (EtcdCase), and a pair of elastic
agents of which one is killed (ElasticPairCase). A test whose etcd cannot start skips itself.

A test file sets DDPRUN here before running its tests:
    etcd_case.DDPRUN = sys.argv[1]
"""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
from agents import AgentsCase  # noqa: E402
from procs import wait_for  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "..", "multinode", "worker.sh")
HOST_CHANGE_WORKER = os.path.join(HERE, "host_change_worker.sh")
TORCH_WORKER = os.path.join(HERE, "..", "multinode", "torch_allreduce.py")
FAST_CONF = "last_call_timeout=0.2,join_timeout=20,lease_ttl=2"


class EtcdCase(AgentsCase):
    MEMBERS = 1
    A, B, C = "127.0.0.2", "127.0.0.3", "127.0.0.4"

    def setUp(self):
        try:
            self.etcd = self.make_cluster()
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        super().setUp()

    def tearDown(self):
        super().tearDown()  # the agents first, while etcd still answers their last words
        self.etcd.stop()

    def make_cluster(self):
        return etcd.Cluster(self.MEMBERS)

    def start(self, name, addr, nproc, mode, nnodes="2", extra=(), env_extra=None,
              conf=FAST_CONF, endpoints=None, run_id=None, backend="etcd", program=None,
              prefix=()):
        env = dict(os.environ, MODE=mode, MARK_DIR=self.marks)
        env.update(env_extra or {})
        args = [DDPRUN, "--nnodes", nnodes, "--nproc-per-node", str(nproc),
                "--rdzv-backend", backend,
                "--rdzv-endpoint", endpoints or self.etcd.endpoints(),
                "--rdzv-id", run_id or "job-" + self.id().split(".")[-1],
                "--rdzv-conf", conf, "--local-addr", addr, "--shutdown-timeout", "5",
                *extra, *(program or ["--no-python", WORKER])]
        args = list(prefix) + args
        return self.spawn(name, args, env)


class ElasticPairCase(EtcdCase):
    """Two agents of an elastic 1:2 job (self.CONF, set by the test class or test), "a"
    hosting the rendezvous; one is then killed or stopped and the other goes on at MIN."""

    def start_pair(self, run_id=None):
        env = {"SMALL": "2"}
        a = self.start("a", self.A, 2, "wait_big", nnodes="1:2", env_extra=env, conf=self.CONF,
                       run_id=run_id)
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 10, "a hosting")
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", env_extra=env, conf=self.CONF,
                       run_id=run_id)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        return a, b

    def restarted_after(self, t0):
        """Seconds from t0 (time.time()) to the last worker start (workers touch their mark)."""
        return max(os.stat(os.path.join(self.marks, n)).st_mtime for n in self.started()) - t0

    def check_survivor(self, agent):
        try:
            code = agent.wait()
        except Exception:
            print(agent.stderr(), file=sys.stderr)
            raise
        self.assertEqual(code, 0, agent.stderr())
        last = [r for r in self.env_lines(agent.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1], agent.stdout())
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in last}, {"1"})

    def kill_one_of_a_pair(self, victim, run_id):
        """SIGKILLs agent `victim` of a new pair ("a" hosts: it started first; "b" is a
        plain node); returns the survivor, after it finished at MIN, and the seconds from the
        kill to its workers running again."""
        for n in os.listdir(self.marks):
            os.remove(os.path.join(self.marks, n))
        a, b = self.start_pair(run_id=run_id)
        dead, survivor = (b, a) if victim == "b" else (a, b)
        start = time.time()
        dead.proc.send_signal(signal.SIGKILL)
        dead.wait()
        self.check_survivor(survivor)
        return survivor, self.restarted_after(start)
