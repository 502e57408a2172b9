"""ddprun inside a Slurm or PBS allocation of two nodes, with no rendezvous flags: two real
agents on this machine, each given the environment its batch system would set on its node,
find each other through the c10d rendezvous on the first host (which the agent of node 0
hosts) and run 2 x 2 workers.

The two "nodes" are either two loopback addresses (127.0.0.1, 127.0.0.2: the node list holds
addresses, which hostlist syntax accepts and which resolve without /etc/hosts), or two network
namespaces joined by a veth pair (as in tests/integration/multinode NetnsTest), each agent
also in its own UTS namespace whose hostname is its node's address: that is how a PBS agent
finds its line in PBS_NODEFILE, by its hostname, with no test seam in ddprun.

No Slurm or PBS server runs: the variables are the ones those systems set (see
tests/cluster/real_slurm_test.py for what a real srun step sets). Usage:
    test_allocation.py DDPRUN [TestClass]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
import netns  # noqa: E402
from agents import env_lines  # noqa: E402
from procs import OutputProcess, free_port, wait_for  # noqa: E402

DDPRUN = None
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.sh")
DEADLINE_S = 60
SCHEDULER_PREFIXES = ("SLURM_", "SLURMD_", "PBS_", "PET_", "DDPRUN_")








class Agent(OutputProcess):
    def __init__(self, tmp, name, argv, env):
        super().__init__(tmp, name, argv, env, timeout=DEADLINE_S)


class AllocationCase(unittest.TestCase):
    """Two nodes; subclasses say how a node runs (loopback or namespace) and what its batch
    system's environment is."""
    addrs = ["127.0.0.1", "127.0.0.2"]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ddprun-alloc-it-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.agents = []

    def tearDown(self):
        for a in self.agents:
            a.kill()

    def base_env(self, mode):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(SCHEDULER_PREFIXES) and k != "CUDA_VISIBLE_DEVICES"}
        env.update({"MODE": mode, "MARK_DIR": self.marks})
        return env

    def node_env(self, node):  # the batch system's variables on node `node`
        raise NotImplementedError

    def prefix(self, node):  # what runs ddprun on node `node`
        return []

    def start_nodes(self, mode, args=("--nproc-per-node", "2"), order="host_first"):
        """One agent per node, no rendezvous flags. order: "host_first" starts node 1 once node
        0's agent hosts the rendezvous; "at_once" starts both at once, as srun and pbsdsh do;
        "host_last" starts node 1 first and node 0 only once node 1 is retrying to reach the
        rendezvous that node 0 will host. Returns the agents in node order."""
        nodes = (1, 0) if order == "host_last" else (0, 1)
        started = {}
        for node in nodes:
            env = self.base_env(mode)
            env.update(self.node_env(node))
            argv = self.prefix(node) + [DDPRUN, "--shutdown-timeout", "5", *args,
                                        "--no-python", WORKER]
            started[node] = Agent(self.tmp, "node%d" % node, argv, env)
            self.agents.append(started[node])
            if node == 0 and order == "host_first":
                wait_for(lambda: "hosting the rendezvous" in started[0].stderr()
                         or started[0].proc.poll() is not None, 20, "node 0 to host")
            if node == 1 and order == "host_last":
                wait_for(lambda: "not reachable yet" in started[1].stderr()
                         or started[1].proc.poll() is not None, 20, "node 1 to retry")
        return [started[0], started[1]]

    env_lines = staticmethod(env_lines)

    def check_two_by_two(self, run_id):
        a, b = self.start_nodes("ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        # Node 0 (the first host) hosts the rendezvous; node 1 joins it.
        self.assertIn("hosting the rendezvous", a.stderr())
        self.assertNotIn("hosting the rendezvous", b.stderr())
        per_node = [self.env_lines(a.stdout()), self.env_lines(b.stdout())]
        rows = per_node[0] + per_node[1]
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1, 2, 3], rows)
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"4"})
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in rows}, {"2"})
        self.assertEqual({r["LWS"] for r in rows}, {"2"})
        self.assertEqual({r["RUN_ID"] for r in rows}, {run_id})
        masters = {r["MASTER"] for r in rows}
        self.assertEqual(len(masters), 1, masters)
        groups = []
        for node, node_rows in enumerate(per_node):
            group = {r["GROUP_RANK"] for r in node_rows}
            self.assertEqual(len(group), 1, node_rows)  # one group rank per node
            group = int(group.pop())
            groups.append(group)
            for r in node_rows:  # global rank = group rank x 2 + local rank
                self.assertEqual(int(r["RANK"]), group * 2 + int(r["LOCAL_RANK"]), r)
            if group == 0:  # the worker store is group rank 0's, at the address it advertised
                self.assertEqual(masters.pop().split(":")[0], self.addrs[node])
        self.assertEqual(sorted(groups), [0, 1])
        return per_node

    def check_failure_stops_the_other(self):
        a, b = self.start_nodes("fail_b")
        # The job's exit code, the same on both nodes: the failed worker's.
        self.assertEqual(a.wait(), 3, a.stderr())
        self.assertEqual(b.wait(), 3, b.stderr())
        with open(os.path.join(self.marks, "failed")) as f:
            failed = float(f.read())
        stopped = {}
        for name in os.listdir(self.marks):
            if name.startswith("stopped."):
                with open(os.path.join(self.marks, name)) as f:
                    stopped[name] = float(f.read())
        # The three other workers were stopped by SIGTERM, both of group rank 0's among them.
        self.assertEqual(sorted(stopped), ["stopped.0.0", "stopped.0.1", "stopped.1.1"],
                         os.listdir(self.marks))
        print("cross-node teardown: %.0f ms" %
              ((max(stopped["stopped.0.0"], stopped["stopped.0.1"]) - failed) * 1000),
              file=sys.stderr)
        for agent in (a, b):
            self.assertIn("Root Cause", agent.stderr())


class SlurmLoopbackTest(AllocationCase):
    """SLURM_JOB_NODELIST=127.0.0.1,127.0.0.2; the rendezvous port from DDPRUN_RDZV_PORT."""

    def setUp(self):
        super().setUp()
        self.port = free_port()

    def node_env(self, node):
        return {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": ",".join(self.addrs),
                "SLURM_NNODES": "2", "SLURM_NODEID": str(node),
                "DDPRUN_RDZV_PORT": str(self.port)}

    def fake_gpus(self, count):
        root = os.path.join(self.tmp, "nvidia")
        for i in range(count):
            os.makedirs(os.path.join(root, "gpus", "0000:%02x:00.0" % (i + 1)))
        return root

    def test_two_by_two_ranks_and_job_id(self):
        self.check_two_by_two("4242")

    def test_step_gpus_give_the_workers(self):
        # SLURM_STEP_GPUS decides each node's worker count and GPUs (no --nproc-per-node).
        root = self.fake_gpus(4)
        saved = self.node_env
        gpus = ["1,3", "0,2"]
        self.node_env = lambda node: dict(saved(node), SLURM_STEP_GPUS=gpus[node],
                                          DDPRUN_PROC_NVIDIA=root)
        per_node = self.start_nodes("ok", args=())
        for agent in per_node:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        for node, agent in enumerate(per_node):
            rows = self.env_lines(agent.stdout())
            self.assertEqual(len(rows), 2, agent.stdout())
            self.assertEqual({r["CUDA"] for r in rows}, {gpus[node]})
            self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"4"})

    def test_failure_on_one_node_stops_the_other(self):
        self.check_failure_stops_the_other()

    def test_a_node_started_before_the_host_waits_for_it(self):
        # c10d: node 1's agent is up first and keeps trying the endpoint (read_timeout) until
        # node 0's agent hosts the rendezvous there; then the job runs as usual.
        a, b = self.start_nodes("ok", order="host_last")
        self.assertIn("not reachable yet", b.stderr())
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("hosting the rendezvous", a.stderr())
        ranks = sorted(int(r["RANK"]) for agent in (a, b) for r in self.env_lines(agent.stdout()))
        self.assertEqual(ranks, [0, 1, 2, 3])

    def test_static_backend_at_once_pins_group_rank_to_node_id(self):
        # --rdzv-backend static keeps the allocation's topology (node rank = SLURM_NODEID,
        # master = the first host); static agents wait for node 0, so both start at once.
        port = str(free_port())
        a, b = self.start_nodes("ok", args=("--rdzv-backend", "static", "--master-port", port,
                                            "--nproc-per-node", "2"), order="at_once")
        for node, agent in enumerate((a, b)):
            self.assertEqual(agent.wait(), 0, agent.stderr())
            rows = self.env_lines(agent.stdout())
            self.assertEqual({r["GROUP_RANK"] for r in rows}, {str(node)}, rows)
            self.assertEqual(sorted(int(r["RANK"]) for r in rows), [2 * node, 2 * node + 1])
            self.assertEqual({r["MASTER"] for r in rows}, {"127.0.0.1:" + port})
            self.assertEqual({r["RUN_ID"] for r in rows}, {"4242"})

    def test_explicit_topology_flags_win(self):
        # --nnodes 1 on each: two independent single-node jobs, no rendezvous between them.
        a, b = self.start_nodes("ok", args=("--nnodes", "1", "--nproc-per-node", "1"),
                                order="at_once")
        for agent in (a, b):
            self.assertEqual(agent.wait(), 0, agent.stderr())
            rows = self.env_lines(agent.stdout())
            self.assertEqual([(r["RANK"], r["WORLD_SIZE"], r["RUN_ID"]) for r in rows],
                             [("0", "1", "4242")])
            self.assertIn("explicit node options take precedence", agent.stderr())


class NetnsCase(AllocationCase):
    """Each node in its own network namespace (its own IP on a veth pair) and its own UTS
    namespace (hostname = its IP). Ports are per namespace: the default 29400 is used."""
    addrs = ["10.232.0.1", "10.232.0.2"]

    def setUp(self):
        super().setUp()
        self.hosts = None
        try:
            subprocess.run(["unshare", "--uts", "true"], check=True, capture_output=True,
                           timeout=10)
            self.hosts = netns.TwoHosts("da", self.addrs)
        except (OSError, subprocess.CalledProcessError, netns.Unavailable) as e:
            self.skipTest("network/UTS namespaces unavailable here (%s); needs root" % e)
        self.ns = self.hosts.ns
        self.addCleanup(self.remove_namespaces)

    def remove_namespaces(self):
        for a in self.agents:  # nothing may hold a namespace when it goes
            a.kill()
        self.hosts.remove()

    def prefix(self, node):
        # ip netns exec, unshare and sh all exec: the Popen pid is ddprun's.
        return ["ip", "netns", "exec", self.ns[node], "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', self.addrs[node]]


class PbsNetnsTest(NetnsCase):
    """PBS_NODEFILE with two slots per node; each agent finds its node by its hostname."""

    def node_env(self, node):
        path = os.path.join(self.tmp, "nodefile")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write("".join(addr + "\n" for addr in self.addrs for _ in range(2)))
        return {"PBS_JOBID": "99.pbs-server", "PBS_NODEFILE": path,
                "PBS_ENVIRONMENT": "PBS_BATCH"}

    def test_two_by_two_ranks_and_job_id(self):
        self.check_two_by_two("99.pbs-server")

    def test_failure_on_one_node_stops_the_other(self):
        self.check_failure_stops_the_other()


class SlurmNetnsTest(NetnsCase):
    """A step's variables as srun sets them, rendezvous on the default port 29400."""

    def node_env(self, node):
        return {"SLURM_JOB_ID": "5151", "SLURM_JOB_NODELIST": "10.232.0.[1-2]",
                "SLURM_STEP_NODELIST": "10.232.0.[1-2]", "SLURM_NNODES": "2",
                "SLURM_STEP_NUM_NODES": "2", "SLURM_NODEID": str(node),
                "SLURMD_NODENAME": self.addrs[node]}

    def test_two_by_two_ranks_and_job_id(self):
        self.check_two_by_two("5151")
        self.assertIn("10.232.0.1:29400", self.agents[0].stderr())


if __name__ == "__main__":
    DDPRUN = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
