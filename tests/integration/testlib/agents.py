"""The set-up the integration tests of several real ddprun agents share: a temporary directory
per test with the workers' marks folder in it (their MARK_DIR), the agents started in it, a
standalone ddp-rendezvous; at tearDown every one killed and the directory removed.

    sys.path.insert(0, os.path.join(HERE, "..", "testlib")); from agents import AgentsCase

    class MyCase(AgentsCase):
        AGENT_TIMEOUT_S = 40          # how long agent.wait() waits
        def start(self, name, ...):
            return self.spawn(name, [DDPRUN, ...], env)
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

from procs import OutputProcess, wait_for


def env_lines(text):
    """The workers' "ENV K=V K=V ..." lines in `text` (worker.sh prints them), one dict each."""
    rows = []
    for line in text.splitlines():
        m = re.search(r"ENV (.*)", line)
        if m:
            rows.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    return rows


def assert_usage_error(case, argv, words):
    """Runs argv, a ddprun command line it must refuse, for the unittest `case`: exit code 2 and
    one line on stderr, "ddprun: error: ...", holding each of `words`."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    err = p.stderr.strip()
    case.assertEqual(p.returncode, 2, err)
    case.assertEqual(len(err.splitlines()), 1, err)
    case.assertTrue(err.startswith("ddprun: error: "), err)
    for w in words:
        case.assertIn(w, err)


class AgentsCase(unittest.TestCase):
    AGENT_TIMEOUT_S = 40
    TMP_PREFIX = None  # the temporary directory's name prefix (None: tempfile's own)

    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix=self.TMP_PREFIX)
        self.tmp = self.tmpdir.name
        self.marks = os.path.join(self.tmp, "marks")
        os.mkdir(self.marks)
        self.agents = []
        self.daemon = None

    def tearDown(self):
        for a in self.agents:
            a.kill()
        if self.daemon is not None:
            self.daemon.kill()
            self.daemon.wait()
        self.tmpdir.cleanup()

    def spawn(self, name, argv, env):
        """Runs argv as agent `name` (output in TMP/NAME.out and .err), killed at tearDown."""
        agent = OutputProcess(self.tmp, name, argv, env, timeout=self.AGENT_TIMEOUT_S)
        self.agents.append(agent)
        return agent

    @staticmethod
    def wait_hosting(agent, what="the host agent"):
        """Returns once `agent` says it hosts the rendezvous; AssertionError after 10 s."""
        wait_for(lambda: "hosting the rendezvous" in agent.stderr(), 10, what)

    def started(self):
        """The marks the workers left when they started ("started.*")."""
        return [n for n in os.listdir(self.marks) if n.startswith("started.")]

    env_lines = staticmethod(env_lines)

    def root_cause(self, text):
        """The "Root Cause" block of ddprun's failure report in `text`, its [ddprun] lines
        cut."""
        m = re.search(r"Root Cause.*?(?=\n\n|\Z)", text, re.S)
        self.assertIsNotNone(m, text)
        return re.sub(r"\[ddprun\].*", "", m.group(0)).strip()

    def assert_stopped_within(self, limit_s, count, label):
        """From worker.sh's marks: `count` workers of the first attempt stopped (stopped.0.*),
        the last within limit_s of the failure (the mark "failed"); prints that latency."""
        with open(os.path.join(self.marks, "failed")) as f:
            failed = float(f.read())
        stopped = []
        for name in os.listdir(self.marks):
            if name.startswith("stopped.0."):
                with open(os.path.join(self.marks, name)) as f:
                    stopped.append(float(f.read()))
        self.assertEqual(len(stopped), count, os.listdir(self.marks))
        latency = max(stopped) - failed
        print("%s: %.1f ms" % (label, latency * 1000), file=sys.stderr)
        self.assertLess(latency, limit_s)

    def start_daemon(self, path, *extra):
        """Starts the standalone ddp-rendezvous at `path` (the test skips when path is None) on
        127.0.0.1, port 0, as self.daemon (killed at tearDown); once it listens, self.port is
        the port its readiness line ("listening on HOST:PORT") names."""
        if path is None:
            self.skipTest("run with --daemon=PATH_TO_ddp-rendezvous")
        out_path = os.path.join(self.tmp, "daemon.out")
        with open(out_path, "wb") as out, open(os.path.join(self.tmp, "daemon.err"), "wb") as err:
            self.daemon = subprocess.Popen([path, "--host", "127.0.0.1", "--port", "0", *extra],
                                           stdout=out, stderr=err, stdin=subprocess.DEVNULL)

        def listening():
            with open(out_path) as f:
                m = re.search(r"listening on \S+:(\d+)\n", f.read())
            if m:
                self.port = int(m.group(1))
            return m is not None
        wait_for(listening, 10, "ddp-rendezvous to listen")
