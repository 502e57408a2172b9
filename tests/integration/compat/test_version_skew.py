"""Version skew between ddprun releases: an agent and a rendezvous daemon of native protocols
that cannot work together (this build's and ddprun 0.1's, built from its kept commit by
scripts/old_ddprun.sh) end the join at once, each way, with one line naming both releases and
which side to upgrade, with and without a job secret, on the c10d and etcd backends.
Usage:
    test_version_skew.py DDPRUN OLD_DDPRUN [TestClass]
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
from agents import AgentsCase  # noqa: E402
from procs import free_port  # noqa: E402

NEW = OLD = None
WORKER = os.path.join(HERE, "..", "multinode", "go_worker.sh")
SECRET = "version-skew-secret-0123456789abcdef"
# Long enough that only the refusal can end the join within the test's wait.
CONF = "join_timeout=120,last_call_timeout=0.2,keep_alive_interval=0.2"
NEW_SAYS = "ddprun 0.2.0 (native protocol 2)"
OLD_SAYS = "ddprun 0.1 (native protocol 1)"


class SkewCase(AgentsCase):
    AGENT_TIMEOUT_S = 60
    BACKEND = None

    def setUp(self):
        if not os.access(OLD, os.X_OK):
            self.skipTest("no ddprun 0.1 at %s: scripts/old_ddprun.sh builds it" % OLD)
        super().setUp()
        self.run_id = "skew-" + self.id().rsplit(".", 1)[-1]
        self.secret_file = os.path.join(self.tmp, "secret")
        with open(self.secret_file, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(self.secret_file, 0o600)

    def endpoint(self):
        raise NotImplementedError

    def start(self, name, binary, addr, secret):
        conf = CONF + (",secret_file=" + self.secret_file if secret else "")
        env = dict(os.environ, MARK_DIR=self.marks)
        env.pop("DDPRUN_SECRET", None)
        return self.spawn(name, [binary, "--nnodes", "2", "--nproc-per-node", "1",
                                 "--rdzv-backend", self.BACKEND, "--rdzv-endpoint",
                                 self.endpoint(), "--rdzv-id", self.run_id, "--rdzv-conf", conf,
                                 "--local-addr", addr, "--shutdown-timeout", "5", "--no-python",
                                 WORKER], env)

    def check(self, host_binary, node_binary, secret, upgrade):
        """The host (its daemon) of one release, then a node of the other: the node ends at
        once with the skew line; returns after checking it."""
        self.wait_hosting(self.start("host", host_binary, "127.0.0.2", secret))
        t0 = time.monotonic()
        node = self.start("node", node_binary, "127.0.0.3", secret)
        code = node.wait()
        took = time.monotonic() - t0
        err = node.stderr()
        self.assertNotEqual(code, 0, err)
        lines = [l for l in err.splitlines() if "version skew" in l]
        self.assertEqual(len(lines), 1, err)
        for words in (NEW_SAYS, OLD_SAYS, "upgrade ddprun on " + upgrade):
            self.assertIn(words, lines[0])
        self.assertEqual(self.started(), [], "no worker may start")
        # "At once": far inside the 120 s join timeout (measured: well under a second on an
        # idle machine; the bound leaves room for a loaded one).
        self.assertLess(took, 20, err)
        print("%s node ended %.3f s after its start" % (self.id().rsplit(".", 1)[-1], took),
              file=sys.stderr)

    def test_old_agent_on_a_new_daemon(self):
        self.check(NEW, OLD, False, "this node")

    def test_new_agent_on_an_old_daemon(self):
        self.check(OLD, NEW, False, "the daemon's host")

    def test_old_agent_on_a_new_daemon_with_a_secret(self):
        self.check(NEW, OLD, True, "this node")

    def test_new_agent_on_an_old_daemon_with_a_secret(self):
        self.check(OLD, NEW, True, "the daemon's host")


class C10dSkewTest(SkewCase):
    BACKEND = "c10d"

    def setUp(self):
        self.port = free_port()
        super().setUp()

    def endpoint(self):
        return "127.0.0.1:%d" % self.port


class EtcdSkewTest(SkewCase):
    BACKEND = "etcd"

    def setUp(self):
        try:
            self.etcd = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(self.etcd.stop)  # after the agents' tearDown
        super().setUp()

    def endpoint(self):
        return self.etcd.endpoints()


if __name__ == "__main__":
    NEW, OLD = sys.argv[1], sys.argv.pop(2)
    sys.argv.pop(1)
    import testmain  # noqa: E402
    testmain.main()
