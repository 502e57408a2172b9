"""Agents joining a standalone ddp-rendezvous daemon (is_host=false): two jobs at once through
one daemon, and a frozen agent removed by the daemon, told why when it wakes, while its
elastic job goes on. Usage:
    test_multinode_standalone.py DDPRUN --daemon=DDP_RENDEZVOUS [TestClass]
"""
import signal
import sys

import multinode_case
from multinode_case import FAST_CONF, MultiNodeCase
from procs import wait_for  # noqa: E402  (multinode_case put testlib on the path)


class StandaloneTest(MultiNodeCase):
    """Every agent joins a standalone ddp-rendezvous (is_host=false); one daemon, two jobs."""

    def test_two_jobs_at_once_through_one_standalone_daemon(self):
        self.start_daemon(multinode_case.DAEMON)
        conf = FAST_CONF + ",is_host=false"
        # Job x: 2 nodes x 2 workers; job y: 1 + 3 workers. Every worker waits until all 8
        # have started, so both jobs provably run at the same time through the one daemon.
        jobs = {"x": (2, 2), "y": (1, 3)}
        agents = {}
        addr = 1
        for job, nprocs in jobs.items():
            for node, nproc in enumerate(nprocs):
                agents[(job, node)] = self.start(
                    "%s%d" % (job, node), "127.0.0.%d" % addr, nproc, "all_started",
                    conf=conf, run_id="standalone-" + job,
                    env_extra={"ALL": "8", "MARK_TAG": job})
                addr += 1
        for key, agent in agents.items():
            self.assertEqual(agent.wait(), 0, "%s: %s" % (key, agent.stderr()))
            self.assertNotIn("hosting the rendezvous", agent.stderr())
        self.assertIsNone(self.daemon.poll(), "the daemon outlives its jobs")
        for job in jobs:
            rows = []
            for node in range(2):
                rows += self.env_lines(agents[(job, node)].stdout())
            self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1, 2, 3], rows)
            self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"4"})
            self.assertEqual({r["GROUP_WORLD_SIZE"] for r in rows}, {"2"})
            self.assertEqual({r["RUN_ID"] for r in rows}, {"standalone-" + job})
            self.assertEqual(len({r["MASTER"] for r in rows}), 1)
            for r in rows:  # RANK = node offset + LOCAL_RANK, offsets from the real counts
                lws = int(r["LWS"])
                self.assertEqual(int(r["RANK"]) - int(r["LOCAL_RANK"]),
                                 0 if r["GROUP_RANK"] == "0" else 4 - lws, r)

    def test_a_frozen_agent_is_removed_told_why_and_the_elastic_job_goes_on(self):
        # Node b is frozen (SIGSTOP) for longer than the heartbeat budget: the daemon removes
        # it and the elastic 1:2 job re-forms on a alone without using a restart; when b
        # wakes it reads why it was removed, stops its workers and exits 1 (never waits on).
        self.start_daemon(multinode_case.DAEMON)
        # A 2 s budget: b's freeze outlasts it, and the healthy a meets it on a loaded machine.
        conf = ("last_call_timeout=30,keep_alive_interval=0.25,keep_alive_max_attempt=8,"
                "join_timeout=20,is_host=false")
        env = {"SMALL": "1"}
        a = self.start("a", self.A, 1, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        b = self.start("b", self.B, 1, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 2, 20, "2 workers of round 1")
        b.proc.send_signal(signal.SIGSTOP)
        self.assertEqual(a.wait(), 0, a.stderr())  # round 2 at WORLD_SIZE 1 exits 0
        self.assertIn("missed its heartbeats", a.stderr())
        self.assertEqual({r["RC"] for r in self.env_lines(a.stdout())}, {"0"})
        b.proc.send_signal(signal.SIGCONT)
        self.assertEqual(b.wait(timeout=15), 1, b.stderr())
        err = b.stderr()
        self.assertIn("the rendezvous removed this node from job", err)
        self.assertIn("missed its heartbeats", err)
        self.assertNotIn("lost the rendezvous daemon", err)
        self.assertNotIn("waiting for the other nodes", err)


if __name__ == "__main__":
    import testmain  # noqa: E402
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
