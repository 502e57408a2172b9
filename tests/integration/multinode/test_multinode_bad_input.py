"""Bad c10d rendezvous options of a multi-node ddprun are refused with a usage error naming
the option: a bad or missing endpoint, an unknown --rdzv-conf key, a bad timeout value.
Usage:
    test_multinode_bad_input.py DDPRUN [--daemon=DDP_RENDEZVOUS] [TestClass]
"""
import sys
import unittest

import multinode_case
from agents import assert_usage_error  # noqa: E402  (multinode_case put testlib on the path)


class BadInputTest(unittest.TestCase):
    def check(self, words, *args):
        assert_usage_error(self, [multinode_case.DDPRUN, "--nnodes", "2", *args, "--no-python",
                                  "true"], words)

    def test_bad_endpoint_port(self):
        self.check(["--rdzv-endpoint"], "--rdzv-backend", "c10d", "--rdzv-endpoint",
                   "127.0.0.1:99999")

    def test_missing_endpoint(self):
        self.check(["--rdzv-endpoint"], "--rdzv-backend", "c10d")

    def test_unknown_conf_key(self):
        self.check(["unknown key 'colour'"], "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:1",
                   "--rdzv-conf", "colour=blue")

    def test_bad_timeout_value(self):
        self.check(["join_timeout"], "--rdzv-backend", "c10d", "--rdzv-endpoint",
                   "127.0.0.1:1", "--rdzv-conf", "join_timeout=soon")


if __name__ == "__main__":
    import testmain  # noqa: E402
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
