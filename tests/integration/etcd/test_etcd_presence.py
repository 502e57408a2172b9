"""The presence signal of the etcd backend (docs/etcd.md, "Presence"): a dead agent process is
noticed when its socket closes, long before its lease could expire; a frozen agent keeps its
connection open and is left to its lease. Real etcd and real ddprun agents on loopback
addresses; skipped (exit 77) where etcd is not installed. Usage:
    test_etcd_presence.py DDPRUN [TestClass]
"""
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import test_etcd  # noqa: E402
from procs import wait_for  # noqa: E402

AGENT_GONE = "is gone (its agent's presence connection closed)"
COORDINATOR_GONE = "is gone (its presence connection closed)"


class EtcdPresenceTest(test_etcd.EtcdCase):
    # A lease far longer than the recovery asserted: only the presence signal can be this fast.
    LONG = "last_call_timeout=30,join_timeout=20,lease_ttl=10"
    SHORT = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    start_pair = test_etcd.EtcdElasticTest.start_pair
    restarted_after = test_etcd.EtcdElasticTest.restarted_after
    check_survivor = test_etcd.EtcdElasticTest.check_survivor
    kill_one_of_a_pair = test_etcd.EtcdElasticTest.kill_one_of_a_pair

    def test_sigkill_of_either_agent_is_seen_long_before_its_lease_expires(self):
        self.CONF = self.LONG
        for victim in ("b", "a"):  # b: a plain node; a: the coordinator (it started first)
            with self.subTest(victim=victim):
                survivor, took = self.kill_one_of_a_pair(victim, "presence-" + victim)
                print("lease_ttl=10, SIGKILL of %s -> survivor's workers running again: %.2f s"
                      % (victim, took), file=sys.stderr)
                self.assertLess(took, 2.0)  # the lease would take 6.7-10.5 s
                # The survivor names the cause: the coordinator saw b's connection close, or
                # b saw the coordinator's close and revoked its lease.
                self.assertIn(AGENT_GONE if victim == "b" else COORDINATOR_GONE,
                              survivor.stderr())
                state = json.loads(self.etcd.history("/ddprun/presence-%s/state" % victim)[-1][1])
                self.assertEqual((state["departures"], state["restart_count"]), (1, 0))
                if victim == "a":
                    self.assertIn("taking over its running round 1: 1 of its 2 node(s) gone",
                                  survivor.stderr())
                self.agents.clear()

    def test_a_frozen_agent_is_left_to_its_lease(self):
        self.CONF = self.SHORT
        a, b = self.start_pair()
        start = time.time()
        b.proc.send_signal(signal.SIGSTOP)  # its sockets stay open: no presence signal
        try:
            wait_for(lambda: "round 2:" in a.stderr(), 10, "a re-formed without b")
            self.assertNotIn("presence connection closed", a.stderr())
        finally:
            b.proc.send_signal(signal.SIGKILL)
        b.wait()
        self.check_survivor(a)
        took = self.restarted_after(start)
        print("lease_ttl=2, SIGSTOP of b -> a's workers running again: %.2f s" % took,
              file=sys.stderr)
        # Only the lease's expiry: at least 2/3 of its TTL after the last keep-alive.
        self.assertGreater(took, 2 * 2 / 3 - 0.1)
        self.assertNotIn(AGENT_GONE, a.stderr())  # its lease was gone already: nothing to revoke

if __name__ == "__main__":
    test_etcd.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
