"""One multi-node c10d job of the real ddprun on one machine: the ranks of two nodes, a
failure on one node stopping the other and the job-wide restart, elastic membership (an agent
killed, leaving, or joining while the job runs), Gloo all-reduce. Each test class runs twice:
with its two agents on loopback addresses (127.0.0.2, .3), and as its Netns* variant
(InNamespaces) with each agent in its own network namespace with its own IP on a veth pair
(root and netns needed, skipped otherwise). Usage:
    test_multinode_jobs.py DDPRUN [--daemon=DDP_RENDEZVOUS] [TestClass]
"""
import os
import re
import signal
import sys
import time

import multinode_case
from multinode_case import HERE, MultiNodeCase
import netns  # noqa: E402  (multinode_case put testlib on the path)
from procs import wait_for  # noqa: E402
import torch_python  # noqa: E402

TORCH_WORKER = os.path.join(HERE, "torch_allreduce.py")


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


class ForeignEndpointTest(MultiNodeCase):
    """A torchrun agent's store on the endpoint (PyTorch's own TCPStore server, what torchrun's
    c10d backend hosts there): the agent, unable to host, joins, has every request closed
    unanswered, and says the endpoint is not a ddprun rendezvous."""

    def test_a_pytorch_store_on_the_endpoint_is_named(self):
        server = self.spawn("torch_store", [
            "/usr/bin/python3", "-c",
            "import signal, sys, torch.distributed as d\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
            "s = d.TCPStore('127.0.0.1', 0, is_master=True, wait_for_workers=False)\n"
            "print('port', s.port, flush=True)\n"
            "signal.sigwait({signal.SIGTERM})\n"], dict(os.environ))
        wait_for(lambda: re.search(r"port \d+", server.stdout()), 30, "PyTorch's store")
        self.port = int(re.search(r"port (\d+)", server.stdout()).group(1))
        b = self.start("b", self.B, 1, "ok", conf="join_timeout=3,read_timeout=3")
        self.assertEqual(b.wait(), 1, b.stderr())
        self.assertIn("closed each rendezvous request unanswered: it is not a ddprun rendezvous",
                      b.stderr())
        server.proc.send_signal(signal.SIGTERM)


class FailureTest(MultiNodeCase):
    def test_failure_on_one_node_stops_the_other(self):
        a = self.start_host("a", self.A, 2, "fail_b")
        b = self.start("b", self.B, 2, "fail_b")
        code_a, code_b = a.wait(), b.wait()
        self.assertEqual(code_a, 3, a.stderr())
        self.assertEqual(code_b, 3, b.stderr())
        # Told, not timed out; the latency is bench/teardown's number.
        self.assert_stopped_within(10.0, 2, "cross-node teardown")
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
        conf = "last_call_timeout=30,join_timeout=20"
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
        conf = "last_call_timeout=30,join_timeout=20"
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
        self.assertLess(time.monotonic() - start, 15)  # generous: a loaded machine
        self.assertIn("lost the rendezvous daemon", b.stderr())
        stopped = [n for n in os.listdir(self.marks) if n.startswith("stopped.")]
        self.assertTrue(stopped, os.listdir(self.marks))  # b's workers were stopped by b


    def test_scale_up_while_running_does_not_use_a_restart(self):
        env = {"SMALL": "2"}
        conf = "last_call_timeout=0.1,join_timeout=20"
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
        env = {"DDPRUN_PYTHON": torch_python.worker_python(self)}
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
        env = {"DDPRUN_PYTHON": torch_python.worker_python(self), "WAIT_BELOW": "4"}
        conf = "last_call_timeout=0.1,join_timeout=20"
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


if __name__ == "__main__":
    import testmain  # noqa: E402
    multinode_case.DDPRUN, multinode_case.DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
