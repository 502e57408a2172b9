"""Multi-node c10d runs of the real ddprun on one machine.

Each agent is a separate ddprun process advertising its own loopback address (127.0.0.x, all
routed to lo on Linux), or, in NetnsTest and the Netns* variants of RanksTest, FailureTest,
ElasticTest and TorchTest (the same tests, InNamespaces), running in its own network namespace
with its own IP on a veth pair; the first one started hosts the rendezvous in-process (is_host inference:
the endpoint is bindable there), the others join it. Usage:
    test_multinode.py DDPRUN [TestClass]
"""
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
import netns  # noqa: E402
from agents import AgentsCase, assert_usage_error  # noqa: E402
from procs import free_port, wait_for  # noqa: E402

DDPRUN = None
DAEMON = None  # ddp-rendezvous, for StandaloneTest
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.sh")
TORCH_WORKER = os.path.join(HERE, "torch_allreduce.py")
PYTHON = "/usr/bin/python3"
FAST_CONF = "last_call_timeout=0.2,keep_alive_interval=0.2,join_timeout=20"


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


class RanksTest(MultiNodeCase):
    def check_world(self, nprocs):
        a = self.start_host("a", self.A, nprocs[0], "ok")
        b = self.start("b", self.B, nprocs[1], "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        world = sum(nprocs)
        self.assertEqual(len(rows), world)
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), list(range(world)))
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {str(world)})
        self.assertEqual({r["ROLE_WORLD_SIZE"] for r in rows}, {str(world)})
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in rows}, {"2"})
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        self.assertEqual(len({r["MASTER"] for r in rows}), 1)
        self.assertEqual(len({r["RUN_ID"] for r in rows}), 1)
        for r in rows:  # global rank = the node's offset + local rank
            self.assertEqual(r["ROLE_RANK"], r["RANK"])
        by_group = {}
        for r in rows:
            by_group.setdefault(r["GROUP_RANK"], []).append(r)
        self.assertEqual(sorted(by_group), ["0", "1"])
        first = by_group["0"]
        offset = len(first)
        for r in by_group["1"]:
            self.assertEqual(int(r["RANK"]), offset + int(r["LOCAL_RANK"]))
            self.assertEqual(r["LWS"], str(len(by_group["1"])))
        # The store is group rank 0's: its advertised address.
        master = rows[0]["MASTER"].split(":")[0]
        zero_out = a.stdout() if any(r["GROUP_RANK"] == "0"
                                     for r in self.env_lines(a.stdout())) else b.stdout()
        self.assertIn(master, (self.A, self.B))
        self.assertEqual(master, self.A if zero_out == a.stdout() else self.B)

    def test_two_by_two(self):
        self.check_world([2, 2])

    def test_different_worker_counts(self):
        self.check_world([2, 1])

    def test_a_waiting_node_says_how_far_the_rendezvous_is(self):
        a = self.start_host("a", self.A, 1, "ok")
        wait_for(lambda: "waiting for the other nodes: 1 of 2 joined" in a.stderr(), 10,
                 "a's progress line")
        self.assertRegex(a.stderr(), r"1 of 2 joined; \d+ s left before the join timeout")
        b = self.start("b", self.B, 1, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertNotIn("of 2 joined", b.stderr())  # it formed the round at once


class FailureTest(MultiNodeCase):
    def test_failure_on_one_node_stops_the_other_within_1s(self):
        a = self.start_host("a", self.A, 2, "fail_b")
        b = self.start("b", self.B, 2, "fail_b")
        code_a, code_b = a.wait(), b.wait()
        self.assertEqual(code_a, 3, a.stderr())
        self.assertEqual(code_b, 3, b.stderr())
        self.assert_stopped_within(1.0, 2, "cross-node teardown")
        # Both print the same root cause: group rank 1's local rank 0, exit code 3.
        ra, rb = self.root_cause(a.stderr()), self.root_cause(b.stderr())
        self.assertEqual(ra, rb)
        self.assertIn("exitcode", ra.replace(" ", "").lower())
        self.assertRegex(ra, r"rank\s*:\s*2 \(local_rank: 0\)")

    def test_restart_is_job_global(self):
        a = self.start_host("a", self.A, 2, "fail_b", extra=["--max-restarts", "1"])
        b = self.start("b", self.B, 2, "fail_b", extra=["--max-restarts", "1"])
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        second = [r for r in rows if r["RC"] == "1"]
        self.assertEqual(len([r for r in rows if r["RC"] == "0"]), 4)
        self.assertEqual(sorted(int(r["RANK"]) for r in second), [0, 1, 2, 3])


class ElasticTest(MultiNodeCase):
    def test_sigkill_of_an_agent_then_the_other_continues_at_min(self):
        extra = ["--max-restarts", "1"]
        env = {"SMALL": "2"}
        # A long last call: the first round forms at MAX (both nodes), never at MIN alone.
        conf = "last_call_timeout=30,keep_alive_interval=0.2,join_timeout=20"
        a = self.start_host("a", self.A, 2, "wait_big", nnodes="1:2", extra=extra,
                            env_extra=env, conf=conf)
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", extra=extra,
                       env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        b_group = "1" if os.path.exists(os.path.join(self.marks, "started.1.0.0")) else "0"
        b.proc.send_signal(signal.SIGKILL)
        b.wait()
        self.assertEqual(a.wait(), 0, a.stderr())
        rows = self.env_lines(a.stdout())
        last = [r for r in rows if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1], a.stdout())
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in last}, {"1"})
        self.assertIn(b_group, ("0", "1"))


    def start_pair(self):
        extra = ["--max-restarts", "1"]
        env = {"SMALL": "2"}
        conf = "last_call_timeout=30,keep_alive_interval=0.2,join_timeout=20"
        a = self.start_host("a", self.A, 2, "wait_big", nnodes="1:2", extra=extra,
                            env_extra=env, conf=conf)
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", extra=extra,
                       env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        return a, b

    def test_sigterm_leaves_without_closing_the_job(self):
        a, b = self.start_pair()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(b.wait(), 128 + signal.SIGTERM, b.stderr())
        self.assertEqual(a.wait(), 0, a.stderr())
        last = [r for r in self.env_lines(a.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1], a.stdout())
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart
        self.assertIn("left", a.stderr())

    def test_losing_the_host_agent_stops_the_others(self):
        a, b = self.start_pair()
        start = time.monotonic()
        a.proc.send_signal(signal.SIGKILL)
        a.wait()
        self.assertEqual(b.wait(), 1, b.stderr())
        self.assertLess(time.monotonic() - start, 5)
        self.assertIn("lost the rendezvous daemon", b.stderr())
        stopped = [n for n in os.listdir(self.marks) if n.startswith("stopped.")]
        self.assertTrue(stopped, os.listdir(self.marks))  # b's workers were stopped by b


    def test_scale_up_while_running_does_not_use_a_restart(self):
        env = {"SMALL": "2"}
        conf = "last_call_timeout=0.1,keep_alive_interval=0.2,join_timeout=20"
        a = self.start_host("a", self.A, 2, "wait_small", nnodes="1:2", env_extra=env,
                            conf=conf)
        wait_for(lambda: len(self.started()) == 2, 20, "round 1 with node a alone")
        b = self.start("b", self.B, 2, "wait_small", nnodes="1:2", env_extra=env,
                       conf=conf)
        self.assertEqual(a.wait(), 0, a.stderr())  # --max-restarts 0: the join is free
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        big = [r for r in rows if r["WORLD_SIZE"] == "4"]
        self.assertEqual(sorted(int(r["RANK"]) for r in big), [0, 1, 2, 3])
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        # a was group rank 0 and stays so: the store stays where it was.
        self.assertEqual({r["MASTER"] for r in big},
                         {r["MASTER"] for r in self.env_lines(a.stdout())})


class TorchTest(MultiNodeCase):
    def test_gloo_allreduce_across_two_nodes(self):
        prog = [TORCH_WORKER]
        env = {"DDPRUN_PYTHON": PYTHON}
        a = self.start_host("a", self.A, 2, "ok", env_extra=env, program=prog)
        b = self.start("b", self.B, 2, "ok", env_extra=env, program=prog)
        self.assertEqual(a.wait(90), 0, a.stderr() + a.stdout())
        self.assertEqual(b.wait(90), 0, b.stderr() + b.stdout())
        sums = re.findall(r"allreduce rank (\d) of 4 sum (\S+)", a.stdout() + b.stdout())
        self.assertEqual(sorted(int(r) for r, _ in sums), [0, 1, 2, 3])
        self.assertEqual({s for _, s in sums}, {"6.0"})


    def test_gloo_after_a_scale_up_restart_with_the_same_restart_count(self):
        # Round 2 reuses /worker/attempt_0: the store host serves it from a fresh store.
        prog = [TORCH_WORKER]
        env = {"DDPRUN_PYTHON": PYTHON, "WAIT_BELOW": "4"}
        conf = "last_call_timeout=0.1,keep_alive_interval=0.2,join_timeout=20"
        a = self.start_host("a", self.A, 2, "ok", nnodes="1:2", env_extra=env,
                            program=prog, conf=conf)
        wait_for(lambda: len([n for n in os.listdir(self.marks) if n.startswith("small.")])
                 == 2, 60, "the Gloo round of node a alone")
        b = self.start("b", self.B, 2, "ok", nnodes="1:2", env_extra=env, program=prog,
                       conf=conf)
        self.assertEqual(a.wait(90), 0, a.stderr() + a.stdout())
        self.assertEqual(b.wait(90), 0, b.stderr() + b.stdout())
        sums = re.findall(r"allreduce rank (\d) of 4 sum (\S+)", a.stdout() + b.stdout())
        self.assertEqual(sorted(int(r) for r, _ in sums), [0, 1, 2, 3])
        self.assertEqual({s for _, s in sums}, {"6.0"})


class NetnsTest(MultiNodeCase):
    """Each node in its own network namespace with its own IP, joined by a veth pair."""

    def setUp(self):
        super().setUp()
        self.addrs = ["10.231.0.1", "10.231.0.2"]
        self.hosts = netns.two_hosts_for(self, "dm", self.addrs)
        self.ns = self.hosts.ns

    def start_in(self, i, name, nproc, mode, **kwargs):
        return self.start(name, self.addrs[i], nproc, mode, prefix=self.hosts.exec_prefix(i),
                          **kwargs)

    def test_two_namespaces_ranks_and_store(self):
        self.endpoint = self.addrs[0]
        a = self.start_in(0, "a", 2, "ok")
        self.wait_hosting(a)
        b = self.start_in(1, "b", 2, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("joining it as a client", b.stderr())  # 10.231.0.1 is not b's address
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1, 2, 3])
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {"4"})
        masters = {r["MASTER"] for r in rows}
        self.assertEqual(len(masters), 1)
        self.assertIn(masters.pop().split(":")[0], self.addrs)

    def test_partition_caught_by_heartbeats(self):
        self.endpoint = self.addrs[0]
        env = {"SMALL": "2"}
        conf = "last_call_timeout=30,keep_alive_interval=0.2,keep_alive_max_attempt=3"
        extra = ["--max-restarts", "1"]
        a = self.start_in(0, "a", 2, "wait_big", nnodes="1:2", extra=extra, env_extra=env,
                          conf=conf)
        self.wait_hosting(a)
        b = self.start_in(1, "b", 2, "wait_big", nnodes="1:2", extra=extra, env_extra=env,
                          conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        b_group = {r["GROUP_RANK"] for r in self.env_lines(b.stdout())}
        self.assertEqual(len(b_group), 1, b.stdout())
        b_group = b_group.pop()
        cut = time.monotonic()
        cut_wall = time.time()
        self.hosts.link_down(1)
        # The cut-off agent notices by itself: the daemon answers nothing for the budget
        # (0.2 s x 3), so b stops its workers and exits 1.
        self.assertEqual(b.wait(timeout=10), 1, b.stderr())
        b_out = time.monotonic() - cut
        self.assertEqual(a.wait(), 0, a.stderr())
        caught = time.monotonic() - cut
        print("partition -> node a finished at MIN: %.0f ms; cut-off node b exited: %.0f ms"
              % (caught * 1000, b_out * 1000), file=sys.stderr)
        self.assertLess(caught, 5)
        self.assertLess(b_out, 0.6 + 0.2 + 1.5)  # budget + one tick + margin (loaded machine)
        self.assertIn("heartbeat", a.stderr().lower())
        self.assertIn("lost the rendezvous daemon", b.stderr())
        self.assertIn("sent nothing for", b.stderr())
        for local in ("0", "1"):  # b's workers were SIGTERMed, not left running
            with open(os.path.join(self.marks, "stopped.%s.%s" % (b_group, local))) as f:
                stopped_at = float(f.read())
            self.assertLess(stopped_at - cut_wall, 0.6 + 0.2 + 1.5)
        last = [r for r in self.env_lines(a.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1])
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart


class InNamespaces:
    """Runs a MultiNodeCase's tests with node A and node B each in its own network namespace
    (own IP on a veth pair), the endpoint being A's address: real separate hosts."""

    def setUp(self):
        super().setUp()
        self.hosts = netns.two_hosts_for(self, "dn", ["10.233.0.2", "10.233.0.3"])
        self.A, self.B = self.hosts.addrs
        self.endpoint = self.A

    def node_prefix(self, addr):
        return self.hosts.exec_prefix(self.hosts.addrs.index(addr))

    def node_env(self):  # Gloo must use the veth, not the hostname's address
        return {"GLOO_SOCKET_IFNAME": netns.IFNAME}


class NetnsRanksTest(InNamespaces, RanksTest):
    pass


class NetnsFailureTest(InNamespaces, FailureTest):
    pass


class NetnsElasticTest(InNamespaces, ElasticTest):
    pass


class NetnsTorchTest(InNamespaces, TorchTest):
    pass


class StandaloneTest(MultiNodeCase):
    """Every agent joins a standalone ddp-rendezvous (is_host=false); one daemon, two jobs."""

    def test_two_jobs_at_once_through_one_standalone_daemon(self):
        self.start_daemon(DAEMON)
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
        self.start_daemon(DAEMON)
        conf = "last_call_timeout=30,keep_alive_interval=0.2,join_timeout=20,is_host=false"
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


class BadInputTest(unittest.TestCase):
    def check(self, words, *args):
        assert_usage_error(self, [DDPRUN, "--nnodes", "2", *args, "--no-python", "true"], words)

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
    DDPRUN, DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
