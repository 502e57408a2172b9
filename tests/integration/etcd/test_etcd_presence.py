"""The presence signal of the etcd backend (docs/etcd.md, "Presence"): a dead agent process is
noticed when its socket closes, long before its lease could expire; a frozen agent keeps its
connection open and is left to its lease. Real etcd and real ddprun agents on loopback
addresses; skipped (exit 77) where etcd is not installed. Usage:
    test_etcd_presence.py DDPRUN [TestClass]
"""
import json
import os
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd_case  # noqa: E402
from procs import wait_for  # noqa: E402

AGENT_GONE = "is gone (its agent's presence connection closed)"
# A worker that holds until the test releases it (SIGUSR1), then exits 0; its pid file says
# it is ready for the signal.
HOLD_WORKER = """#!/bin/bash
trap 'kill $child 2>/dev/null; exit 0' USR1
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT"
echo $$ > "$MARK_DIR/tmp.$GROUP_RANK.$LOCAL_RANK"
mv "$MARK_DIR/tmp.$GROUP_RANK.$LOCAL_RANK" "$MARK_DIR/pid.$GROUP_RANK.$LOCAL_RANK"
sleep 60 &
child=$!
wait $child
"""
COORDINATOR_GONE = "is gone (its presence connection closed)"


class EtcdPresenceTest(etcd_case.ElasticPairCase):
    # A lease far longer than the recovery asserted: only the presence signal can be this fast.
    LONG = "last_call_timeout=30,join_timeout=20,lease_ttl=10"
    SHORT = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

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

    def test_a_forged_hello_is_refused_and_evicts_nobody(self):
        """Someone who reached the coordinator's presence port and read a node's key and lease
        id (but not its token) sends that node's hello and closes without a bye."""
        worker = os.path.join(self.tmp, "hold.sh")
        with open(worker, "w") as f:
            f.write(HOLD_WORKER)
        os.chmod(worker, 0o755)
        run_id = "forged-hello"
        job = "/ddprun/%s/" % run_id
        a = self.start("a", self.A, 2, "hold", conf=self.LONG, run_id=run_id,
                       program=["--no-python", worker])
        wait_for(lambda: "coordinating job" in a.stderr(), 10, "a coordinating")
        b = self.start("b", self.B, 2, "hold", conf=self.LONG, run_id=run_id,
                       program=["--no-python", worker])
        pids = lambda: [n for n in os.listdir(self.marks) if n.startswith("pid.")]  # noqa: E731
        wait_for(lambda: len(pids()) == 4, 20, "4 workers of round 1")

        claim, _ = self.etcd.get(job + "coordinator")
        coordinator_key, listener = claim.split("\n")
        host, port = listener.rsplit(":", 1)
        nodes = self.etcd.keys(job + "nodes/")
        self.assertEqual(len(nodes), 2, nodes)
        victim = [k[len(job + "nodes/"):] for k in nodes if not k.endswith("/" + coordinator_key)]
        self.assertEqual(len(victim), 1, nodes)
        victim = victim[0]
        _, lease = self.etcd.get(job + "nodes/" + victim)
        token, token_lease = self.etcd.get(job + "presence/" + victim)
        self.assertEqual(token_lease, lease)  # written under the node's lease, with its JOIN
        self.assertGreaterEqual(len(token), 32)
        forged_token = "0" * len(token)
        self.assertNotEqual(forged_token, token)

        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(("ddprun-presence\n%s\n%s\n%d\n%s\n\n"
                       % (run_id, victim, lease, forged_token)).encode())
            answer = b""
            while True:  # the coordinator refuses: it says bye and closes
                chunk = s.recv(64)
                if not chunk:
                    break
                answer += chunk
        # ... and the forger's end closes without a bye.
        self.assertEqual(answer, b"bye\n")
        refused = "refused the hello of node %s: token mismatch" % victim
        wait_for(lambda: refused in a.stderr(), 10, "the coordinator's refusal line")

        # The job is untouched: the victim's lease still holds its key, both agents run, no
        # second round, no departure.
        self.assertEqual(self.etcd.get(job + "nodes/" + victim)[1], lease)
        self.assertIsNone(a.proc.poll(), a.stderr())
        self.assertIsNone(b.proc.poll(), b.stderr())
        for n in pids():
            with open(os.path.join(self.marks, n)) as f:
                os.kill(int(f.read()), signal.SIGUSR1)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        for agent in (a, b):
            self.assertNotIn("round 2:", agent.stderr())
            self.assertNotIn("is gone", agent.stderr())
        self.assertEqual(sorted(self.started()),
                         ["started.%d.%d.0" % (g, l) for g in (0, 1) for l in (0, 1)])
        states = [json.loads(v) for _, v in self.etcd.history(job + "state")]
        self.assertEqual({(st["round"], st["departures"], st["restart_count"]) for st in states},
                         {(1, 0, 0)})

if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
