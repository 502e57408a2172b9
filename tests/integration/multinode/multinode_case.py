"""What the multi-node c10d tests share (MultiNodeCase): agents that are separate ddprun
processes on this machine, each advertising its own loopback address (127.0.0.x, all routed
to lo on Linux) or, where a test class says so, running in its own network namespace; the
first one started hosts the rendezvous in-process (is_host inference: the endpoint is bindable
there), the others join it.

A test file sets DDPRUN (and DAEMON, ddp-rendezvous) here before running its tests:
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from agents import AgentsCase  # noqa: E402
from procs import free_port  # noqa: E402

DDPRUN = None
DAEMON = None  # ddp-rendezvous, for StandaloneTest
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.sh")
FAST_CONF = "last_call_timeout=0.2,join_timeout=20"


class MultiNodeCase(AgentsCase):
    AGENT_TIMEOUT_S = 30
    # The two nodes' advertised addresses; InNamespaces moves them into network namespaces.
    A = "127.0.0.2"
    B = "127.0.0.3"

    def node_prefix(self, addr):  # what runs an agent advertising `addr` on its node
        return []

    def node_env(self):  # variables every agent (and so every worker) gets
        return {}

    def setUp(self):
        super().setUp()
        self.port = free_port()
        self.endpoint = "127.0.0.1"

    def start(self, name, addr, nproc, mode, nnodes="2", extra=(), env_extra=None,
              program=None, conf=FAST_CONF, prefix=(), run_id=None):
        env = dict(os.environ, MODE=mode, MARK_DIR=self.marks)
        env.update(self.node_env())
        env.update(env_extra or {})
        args = ["--nnodes", nnodes, "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "%s:%d" % (self.endpoint, self.port), "--rdzv-id", run_id or "job-" + self.id(),
                "--rdzv-conf", conf, "--local-addr", addr, "--shutdown-timeout", "5"]
        args += list(extra)
        args += program or ["--no-python", WORKER]
        args = list(prefix or self.node_prefix(addr)) + [DDPRUN] + args
        return self.spawn(name, args, env)

    def start_host(self, *args, **kwargs):
        agent = self.start(*args, **kwargs)
        self.wait_hosting(agent)
        return agent
