"""The host of an etcd job's rendezvous is replaced (docs/etcd.md): the hosting agent is frozen
past its lease; the others elect a new host, whose daemon resumes the job at the next round
with the restart count it had, and the job goes on to its end. Woken, the old host finds its
lease gone and exits 1. Real etcd and real ddprun agents on loopback addresses; skipped
(exit 77) where etcd is not installed. Usage:
    test_etcd_host.py DDPRUN [TestClass]
"""
import base64
import json
import os
import re
import signal
import sys

import etcd_case
from etcd_case import HOST_CHANGE_WORKER, EtcdCase
import etcd  # noqa: E402  (testlib's, which etcd_case put first on the path)
from procs import wait_for  # noqa: E402  (etcd_case put testlib on the path)


class EtcdHostChangeTest(EtcdCase):
    CONF = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def trigger(self, restart):
        open(os.path.join(self.marks, "trigger.%d" % restart), "w").close()

    def rounds_seen(self, agent):
        """(GROUP_WORLD_SIZE, RC) of every worker start in the agent's output, in order."""
        return [(r["GROUP_WORLD_SIZE"], r["RC"]) for r in self.env_lines(agent.stdout())]

    def host_change(self, wake):
        # The workers beat no steps: every restart is one without progress (off below 5).
        args = dict(nnodes="2:3", conf=self.CONF,
                    extra=["--max-restarts", "2", "--max-no-progress-restarts", "5"],
                    program=["--no-python", HOST_CHANGE_WORKER])
        c = self.start("c", self.C, 1, "", **args)
        wait_for(lambda: "hosting the rendezvous" in c.stderr(), 10, "c hosting")
        a = self.start("a", self.A, 1, "", **args)
        b = self.start("b", self.B, 1, "", env_extra={"FAIL_HERE": "1"}, **args)
        wait_for(lambda: ("3", "0") in self.rounds_seen(a), 20, "round 1 on 3 nodes")
        self.trigger(0)  # b's worker fails: restart 1, still on c
        wait_for(lambda: ("3", "1") in self.rounds_seen(a), 20, "restart 1 on 3 nodes")
        # The host records round 2 in P/state once the round formed (an etcd write of its own):
        # freezing it before that write lands would leave the successor round 1's state.
        state = "/ddprun/job-%s/state" % self.id().split(".")[-1]
        wait_for(lambda: [v for _, v in self.etcd.history(state)
                          if json.loads(v)["restart_count"] == 1], 20, "round 2 in P/state")
        c.proc.send_signal(signal.SIGSTOP)  # the host freezes: only its lease can tell
        wait_for(lambda: ("2", "1") in self.rounds_seen(a), 20,
                 "a and b re-formed on a new host, restart count kept")
        self.assertIn("hosting the rendezvous", a.stderr() + b.stderr())
        c.proc.send_signal(signal.SIGCONT if wake else signal.SIGKILL)
        self.trigger(1)  # b fails again on the new host: restart 2 ...
        # (a's worker of restart 2 prints its start before b's fails again and stops it)
        wait_for(lambda: ("2", "2") in self.rounds_seen(a), 20, "restart 2 on the new host")
        self.trigger(2)  # ... and again: no restarts left
        self.assertEqual(a.wait(), 3, a.stderr())
        self.assertEqual(b.wait(), 3, b.stderr())
        self.assertEqual(self.rounds_seen(a), [("3", "0"), ("3", "1"), ("2", "1"), ("2", "2")])
        self.assertEqual(self.root_cause(a.stderr()), self.root_cause(b.stderr()))
        job = "/ddprun/job-%s/" % self.id().split(".")[-1]
        claims = self.etcd.history(job + "host")
        self.assertEqual(len(claims), 2, claims)
        facts = [json.loads(v) for _, v in self.etcd.history(job + "state")]
        self.assertEqual(facts[-1]["restart_count"], 2)
        self.assertEqual(facts[-1]["departures"], 1)  # the old host
        # The new host went on with the no-progress streak (1 on the old host) and goodput's
        # start (the first JOIN, wall clock; ms of the seek apart). Its ranks name the nodes
        # by group rank, the writer's own key left out (it is what a successor resumes from).
        self.assertEqual(facts[-1]["no_progress_restarts"], 2)
        started = [f["started_ms"] for f in facts]
        self.assertLess(max(started) - min(started), 1000, facts)
        self.assertEqual([len(f["ranks"]) for f in facts], [3, 3, 2, 2], facts)
        self.assertEqual([f["ranks"].count("") for f in facts], [1, 1, 1, 1], facts)
        return c

    def test_a_frozen_host_is_replaced_and_the_restart_count_goes_on(self):
        self.host_change(wake=False)

    def test_a_deposed_host_wakes_and_exits(self):
        c = self.host_change(wake=True)
        self.assertEqual(c.wait(), 1, c.stderr())
        why = re.search(r".*(lease expired|lost etcd|no longer hosts|missed its heartbeats).*", c.stderr())
        self.assertIsNotNone(why, c.stderr())
        # Whatever its own daemon saw (the others leaving it may fail its copy of the job), the
        # job's recorded end is the new host's: exit code 3 (i32 after the push type byte and
        # the u32 length of its fields).
        ends = self.etcd.history("/ddprun/job-%s/finished" % self.id().split(".")[-1])
        self.assertTrue(ends)
        for _, end in ends:
            self.assertNotIn("fewer than min", end)
            self.assertEqual(end[5:9], "\x03\x00\x00\x00", ends)
        print("the deposed host: " + why.group(0), file=sys.stderr)


class EtcdFenceTest(EtcdCase):
    """The host writes P/state and P/finished only while P/host is still the key of its own
    election (its create_revision): here the test replaces P/host under a live host, as an
    election after a lapsed lease would, and the host's next write must be refused."""
    # The worker waits for the test to open the FIFO "go", then exits $EXIT on its first start.
    WORKER = ["--no-python", "sh", "-c", 'cat "$MARK_DIR/go" >/dev/null; '
              '[ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && exit "$EXIT"; exec sleep 60']

    def host_then_depose(self, code):
        os.mkfifo(os.path.join(self.marks, "go"))
        job = "/ddprun/job-%s/" % self.id().split(".")[-1]
        a = self.start("a", self.A, 1, "", nnodes="1", env_extra={"EXIT": str(code)},
                       extra=["--max-restarts", "1"], program=self.WORKER)
        wait_for(lambda: "round 1:" in a.stderr(), 20, "round 1")
        wait_for(lambda: self.etcd.get(job + "state") is not None, 20, "round 1 in P/state")
        url = "http://%s:%d/v3/" % (self.etcd.reach, self.etcd.client_ports[0])
        lease = etcd._post(url + "lease/grant", {"TTL": 60})["ID"]
        key = base64.b64encode((job + "host").encode()).decode()
        etcd._post(url + "kv/deleterange", {"key": key})
        etcd._post(url + "kv/put", {"key": key, "lease": lease,
                                    "value": base64.b64encode(b"127.0.0.9:1").decode()})
        os.close(os.open(os.path.join(self.marks, "go"), os.O_WRONLY))  # the worker goes on
        return a, job

    def test_a_deposed_host_records_no_new_round(self):
        a, job = self.host_then_depose(1)  # a restart: round 2, whose state a may not write
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertIn("no longer hosts job", a.stderr())
        rounds = [json.loads(v)["round"] for _, v in self.etcd.history(job + "state")]
        self.assertEqual(rounds, [1])  # round 1's write only

    def test_a_deposed_host_records_no_end(self):
        a, job = self.host_then_depose(0)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertRegex(a.stderr(), "no longer hosts job .*the end above is its own")
        self.assertEqual(self.etcd.history(job + "finished"), [])


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
