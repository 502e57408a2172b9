"""The etcd rendezvous backend (--rdzv-backend etcd) with real etcd processes and real ddprun
agents on this machine, each advertising its own loopback address. Skipped (exit 77) where
etcd is not installed. Usage:
    test_etcd.py DDPRUN [TestClass]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
import netns  # noqa: E402
from agents import AgentsCase  # noqa: E402
from procs import free_port, wait_for  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "..", "multinode", "worker.sh")
TAKEOVER_WORKER = os.path.join(HERE, "takeover_worker.sh")
TORCH_WORKER = os.path.join(HERE, "..", "multinode", "torch_allreduce.py")
FAST_CONF = "last_call_timeout=0.2,join_timeout=20,lease_ttl=2"


class EtcdCase(AgentsCase):
    MEMBERS = 1
    A, B, C = "127.0.0.2", "127.0.0.3", "127.0.0.4"

    def setUp(self):
        try:
            self.etcd = self.make_cluster()
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        super().setUp()

    def tearDown(self):
        super().tearDown()  # the agents first, while etcd still answers their last words
        self.etcd.stop()

    def make_cluster(self):
        return etcd.Cluster(self.MEMBERS)

    def start(self, name, addr, nproc, mode, nnodes="2", extra=(), env_extra=None,
              conf=FAST_CONF, endpoints=None, run_id=None, backend="etcd", program=None,
              prefix=()):
        env = dict(os.environ, MODE=mode, MARK_DIR=self.marks)
        env.update(env_extra or {})
        args = [DDPRUN, "--nnodes", nnodes, "--nproc-per-node", str(nproc),
                "--rdzv-backend", backend,
                "--rdzv-endpoint", endpoints or self.etcd.endpoints(),
                "--rdzv-id", run_id or "job-" + self.id().split(".")[-1],
                "--rdzv-conf", conf, "--local-addr", addr, "--shutdown-timeout", "5",
                *extra, *(program or ["--no-python", WORKER])]
        args = list(prefix) + args
        return self.spawn(name, args, env)


class EtcdRanksTest(EtcdCase):
    def check_world(self, nprocs, backend="etcd"):
        a = self.start("a", self.A, nprocs[0], "ok", backend=backend)
        b = self.start("b", self.B, nprocs[1], "ok", backend=backend)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        world = sum(nprocs)
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), list(range(world)))
        self.assertEqual({r["WORLD_SIZE"] for r in rows}, {str(world)})
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in rows}, {"2"})
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        self.assertEqual(len({r["MASTER"] for r in rows}), 1)
        by_group = {}
        for r in rows:
            by_group.setdefault(r["GROUP_RANK"], []).append(r)
        self.assertEqual(sorted(by_group), ["0", "1"])
        for r in by_group["1"]:  # global rank = the node's offset + local rank
            self.assertEqual(int(r["RANK"]), len(by_group["0"]) + int(r["LOCAL_RANK"]))
        # The workers' store is group rank 0's agent.
        zero = a if any(r["GROUP_RANK"] == "0" for r in self.env_lines(a.stdout())) else b
        master = rows[0]["MASTER"].split(":")[0]
        self.assertEqual(master, self.A if zero is a else self.B)
        # Every key of the job but its record of the end went with the agents' leases.
        prefix = "/ddprun/job-%s/" % self.id().split(".")[-1]
        self.assertEqual(sorted(self.etcd.keys(prefix)), [prefix + "finished", prefix + "state"])

    def test_two_by_two(self):
        self.check_world([2, 2])

    def test_different_worker_counts_and_the_v2_spelling(self):
        self.check_world([2, 1], backend="etcd-v2")

    def test_a_waiting_node_says_how_far_the_rendezvous_is(self):
        a = self.start("a", self.A, 1, "ok")
        wait_for(lambda: "waiting for the other nodes: 1 of 2 joined" in a.stderr(), 10,
                 "a's progress line")
        self.assertRegex(a.stderr(), r"1 of 2 joined; \d+ s left before the join timeout")
        b = self.start("b", self.B, 1, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertNotIn("of 2 joined", b.stderr())  # it formed the round at once

    def test_a_finished_run_id_is_refused(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1")
        self.assertEqual(a.wait(), 0, a.stderr())
        late = self.start("late", self.B, 1, "ok", nnodes="1")
        self.assertEqual(late.wait(), 1, late.stderr())
        self.assertIn("finished", late.stderr())
        self.assertIn("different --rdzv-id", late.stderr())
        self.assertEqual(self.started(), ["started.0.0.0"])


class EtcdFailureTest(EtcdCase):
    def test_failure_on_one_node_stops_the_other_within_1s(self):
        a = self.start("a", self.A, 2, "fail_b")
        b = self.start("b", self.B, 2, "fail_b")
        code_a, code_b = a.wait(), b.wait()
        self.assertEqual(code_a, 3, a.stderr())
        self.assertEqual(code_b, 3, b.stderr())
        self.assert_stopped_within(1.0, 2, "cross-node teardown through etcd")
        ra, rb = self.root_cause(a.stderr()), self.root_cause(b.stderr())
        self.assertEqual(ra, rb)
        self.assertRegex(ra, r"rank\s*:\s*2 \(local_rank: 0\)")

    def test_restart_is_job_global(self):
        a = self.start("a", self.A, 2, "fail_b", extra=["--max-restarts", "1"])
        b = self.start("b", self.B, 2, "fail_b", extra=["--max-restarts", "1"])
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(len([r for r in rows if r["RC"] == "0"]), 4)
        second = [r for r in rows if r["RC"] == "1"]
        self.assertEqual(sorted(int(r["RANK"]) for r in second), [0, 1, 2, 3])


class EtcdElasticTest(EtcdCase):
    CONF = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def start_pair(self, run_id=None):
        env = {"SMALL": "2"}
        a = self.start("a", self.A, 2, "wait_big", nnodes="1:2", env_extra=env, conf=self.CONF,
                       run_id=run_id)
        wait_for(lambda: "coordinating job" in a.stderr(), 10, "a coordinating")
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", env_extra=env, conf=self.CONF,
                       run_id=run_id)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        return a, b

    def restarted_after(self, t0):
        """Seconds from t0 (time.time()) to the last worker start (workers touch their mark)."""
        return max(os.stat(os.path.join(self.marks, n)).st_mtime for n in self.started()) - t0

    def check_survivor(self, agent):
        self.assertEqual(agent.wait(), 0, agent.stderr())
        last = [r for r in self.env_lines(agent.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1], agent.stdout())
        self.assertEqual({r["RC"] for r in last}, {"0"})  # a departure uses no restart
        self.assertEqual({r["GROUP_WORLD_SIZE"] for r in last}, {"1"})

    def kill_one_of_a_pair(self, victim, run_id):
        """SIGKILLs agent `victim` of a new pair ("a" coordinates: it started first; "b" is a
        plain node); returns the survivor, after it finished at MIN, and the seconds from the
        kill to its workers running again."""
        for n in os.listdir(self.marks):
            os.remove(os.path.join(self.marks, n))
        a, b = self.start_pair(run_id=run_id)
        dead, survivor = (b, a) if victim == "b" else (a, b)
        start = time.time()
        dead.proc.send_signal(signal.SIGKILL)
        dead.wait()
        self.check_survivor(survivor)
        return survivor, self.restarted_after(start)

    def test_sigkill_of_either_agent_lease_expires_and_the_other_goes_on(self):
        for victim in ("b", "a"):  # b: a plain node; a: the coordinator (it started first)
            with self.subTest(victim=victim):
                survivor, took = self.kill_one_of_a_pair(victim, "sigkill-" + victim)
                print("SIGKILL of %s -> survivor's workers running again: %.2f s" % (victim, took),
                      file=sys.stderr)
                self.assertLess(took, 2 + 1.5)  # lease TTL + 1 s (+ the workers' start)
                # The loss is a departure, recorded in the job's state; no restart used.
                state = json.loads(self.etcd.history("/ddprun/sigkill-%s/state" % victim)[-1][1])
                self.assertEqual((state["departures"], state["restart_count"]), (1, 0))
                if victim == "a":  # b took over the running round from etcd's record
                    self.assertIn("taking over its running round 1: 1 of its 2 node(s) gone",
                                  survivor.stderr())
                self.agents.clear()

    def test_sigterm_leaves_at_once(self):
        a, b = self.start_pair()
        start = time.time()
        b.proc.send_signal(signal.SIGTERM)
        self.assertEqual(b.wait(), 128 + signal.SIGTERM, b.stderr())
        self.check_survivor(a)
        self.assertLess(self.restarted_after(start), 1.5)  # revoked, not expired
        self.assertIn("left", a.stderr())

    def test_scale_up_while_running_does_not_use_a_restart(self):
        env = {"SMALL": "2"}
        conf = "last_call_timeout=0.1,join_timeout=20,lease_ttl=2"
        a = self.start("a", self.A, 2, "wait_small", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 2, 20, "round 1 with node a alone")
        b = self.start("b", self.B, 2, "wait_small", nnodes="1:2", env_extra=env, conf=conf)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        big = [r for r in rows if r["WORLD_SIZE"] == "4"]
        self.assertEqual(sorted(int(r["RANK"]) for r in big), [0, 1, 2, 3])
        self.assertEqual({r["RC"] for r in rows}, {"0"})
        self.assertEqual({r["MASTER"] for r in big},
                         {r["MASTER"] for r in self.env_lines(a.stdout())})


class EtcdTakeoverTest(EtcdCase):
    """The coordinating agent is frozen (SIGSTOP) past its lease while a worker fails on
    another node: the successor takes over the running round, the failure uses one restart."""
    CONF = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def start_three(self):
        args = dict(nnodes="2:3", conf=self.CONF, extra=["--max-restarts", "1"],
                    program=["--no-python", TAKEOVER_WORKER])
        c = self.start("c", self.C, 1, "", **args)
        wait_for(lambda: "coordinating job" in c.stderr(), 10, "c coordinating")
        a = self.start("a", self.A, 1, "", **args)
        b = self.start("b", self.B, 1, "", env_extra={"FAIL_HERE": "1"}, **args)
        wait_for(lambda: len(self.started()) == 3, 20, "3 workers of round 1")
        return c, a, b

    def fail_while_frozen(self, c, a, b):
        c.proc.send_signal(signal.SIGSTOP)
        open(os.path.join(self.marks, "trigger"), "w").close()  # b's worker fails now
        wait_for(lambda: os.path.exists(os.path.join(self.marks, "failed")), 10, "b's failure")
        wait_for(lambda: "taking over its running round 1" in a.stderr() + b.stderr(), 10,
                 "a or b taking over after c's lease expired")

    def check_one_restart(self, a, b):
        self.assertEqual(a.wait(), 3, a.stderr())
        self.assertEqual(b.wait(), 3, b.stderr())
        for agent in (a, b):
            rcs = sorted({r["RC"] for r in self.env_lines(agent.stdout())})
            self.assertEqual(rcs, ["0", "1"], agent.stdout())  # restart count 1 on every node
        self.assertEqual(self.root_cause(a.stderr()), self.root_cause(b.stderr()))
        job = "/ddprun/job-%s/" % self.id().split(".")[-1]
        rounds = [json.loads(v) for _, v in self.etcd.history(job + "state")]
        self.assertEqual([(r["round"], r["restart_count"]) for r in rounds], [(1, 0), (2, 1)])
        return job, rounds

    def test_failure_while_the_coordinator_is_replaced_uses_one_restart(self):
        c, a, b = self.start_three()
        self.fail_while_frozen(c, a, b)
        c.proc.send_signal(signal.SIGKILL)
        c.wait()
        self.check_one_restart(a, b)

    def test_a_deposed_coordinator_writes_nothing(self):
        c, a, b = self.start_three()
        self.fail_while_frozen(c, a, b)
        c.proc.send_signal(signal.SIGCONT)  # it wakes up after another took over
        self.assertEqual(c.wait(), 1, c.stderr())
        why = re.search(r".*(lease expired|no longer coordinates).*", c.stderr())
        self.assertIsNotNone(why, c.stderr())
        print("the deposed coordinator: " + why.group(0), file=sys.stderr)
        # The others left it with a bye when its claim went: woken, it revokes nobody.
        self.assertNotIn("presence connection closed", c.stderr())
        job, rounds = self.check_one_restart(a, b)
        # Only the coordinator writes the job's state and end: one write per round, and one
        # end, each after the successor's claim; nothing from c after its lease expired.
        claims = self.etcd.history(job + "coordinator")
        self.assertEqual(len(claims), 2, claims)
        successor = claims[1][0]
        writes = self.etcd.history(job + "state")
        self.assertGreater(writes[1][0], successor)
        ends = self.etcd.history(job + "finished")
        self.assertEqual(len(ends), 1)
        self.assertGreater(ends[0][0], successor)


class EtcdFaultTest(EtcdCase):
    def test_etcd_unreachable_at_start(self):
        dead = "127.0.0.1:%d,127.0.0.1:%d" % (free_port(), free_port())
        start = time.monotonic()
        a = self.start("a", self.A, 1, "ok", endpoints=dead,
                       conf="join_timeout=3,read_timeout=60")
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertLess(time.monotonic() - start, 6)  # the join timeout caps read_timeout
        self.assertIn("cannot reach etcd (%s)" % dead.replace(",", ", "), a.stderr())
        self.assertEqual(self.started(), [])

    def test_an_etcd_outage_shorter_than_the_lease_is_ridden_out(self):
        conf = "last_call_timeout=0.2,join_timeout=20,lease_ttl=5"
        prog = ["--no-python", "/bin/sleep", "4"]
        a = self.start("a", self.A, 1, "ok", conf=conf, program=prog)
        b = self.start("b", self.B, 1, "ok", conf=conf, program=prog)
        wait_for(lambda: "round 1:" in a.stderr() and "round 1:" in b.stderr(), 20, "round 1")
        self.etcd.kill(0, signal.SIGSTOP)  # etcd frozen: calls and keep-alives hang
        time.sleep(2)  # the point: an outage shorter than the 5 s lease
        self.etcd.kill(0, signal.SIGCONT)
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertNotIn("round 2", a.stderr() + b.stderr())  # the workers were never stopped

    def test_etcd_lost_mid_job_stops_the_workers_after_the_lease(self):
        a = self.start("a", self.A, 1, "wait_big", nnodes="1", env_extra={"SMALL": "0"})
        wait_for(lambda: len(self.started()) == 1, 20, "the worker")
        start = time.monotonic()
        self.etcd.kill(0)
        self.assertEqual(a.wait(), 1, a.stderr())
        took = time.monotonic() - start
        self.assertGreater(took, 1.0)  # the workers outlive short outages ...
        self.assertLess(took, 2 + 3)   # ... and stop once the lease (2 s) could not be renewed
        self.assertIn("lost etcd", a.stderr())
        self.assertTrue([n for n in os.listdir(self.marks) if n.startswith("stopped.")])

    def test_a_prefix_holding_other_data(self):
        job = "/ddprun/job-test_a_prefix_holding_other_data/"
        for key in ("nodes/intruder", "req/intruder/1", "ev/x/1", "state", "junk"):
            self.etcd.put(job + key, "not ddprun's")
        a = self.start("a", self.A, 1, "ok")
        b = self.start("b", self.B, 1, "ok")
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("does not hold", a.stderr() + b.stderr())

    def test_bad_input(self):
        cases = [
            ("lease_ttl=0", "lease_ttl"),
            ("protocol=gopher", "protocol"),
            ("cacert=/x", "protocol=https"),
            ("is_host=1", "is_host"),
            ("flavour=mild", "unknown key"),
        ]
        for conf, fragment in cases:
            with self.subTest(conf=conf):
                a = self.start("bad", self.A, 1, "ok", conf=conf)
                self.assertEqual(a.wait(), 2, a.stderr())
                self.assertIn(fragment, a.stderr())
        a = self.start("bad", self.A, 1, "ok", endpoints="h1,,h2")
        self.assertEqual(a.wait(), 2, a.stderr())
        self.assertIn("empty entry", a.stderr())


class EtcdTlsTest(EtcdCase):
    """Two agents through https with a client certificate; a wrong CA is a clear error."""

    def setUp(self):
        self.certs = tempfile.mkdtemp(dir="/dev/shm")
        try:
            etcd.make_certificates(self.certs)
        except (OSError, subprocess.CalledProcessError) as e:
            self.skipTest("openssl: %s" % e)
        super().setUp()

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.certs, ignore_errors=True)

    def make_cluster(self):
        return etcd.Cluster(1, tls_dir=self.certs)

    def tls_conf(self, ca="ca.pem"):
        return (FAST_CONF + ",protocol=https,cacert=%s/%s,cert=%s/client.pem,key=%s/client.key"
                % (self.certs, ca, self.certs, self.certs))

    def test_two_nodes_over_tls(self):
        a = self.start("a", self.A, 1, "ok", conf=self.tls_conf())
        b = self.start("b", self.B, 1, "ok", conf=self.tls_conf())
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1])

    def test_wrong_ca_is_named(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1", conf=self.tls_conf("other.pem"))
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertIn("TLS handshake failed", a.stderr())
        self.assertEqual(self.started(), [])

    def test_missing_file_is_named(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1", conf=self.tls_conf("missing.pem"))
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertIn("missing.pem", a.stderr())


class EtcdNetnsTest(EtcdCase):
    """Two hosts in network namespaces (veth pair); etcd runs on host 0, the agents one per
    host advertising their own addresses."""

    def make_cluster(self):
        self.hosts = netns.two_hosts_for(self, "de", ["10.234.0.1", "10.234.0.2"])
        self.A, self.B = self.hosts.addrs
        return etcd.Cluster(1, host=self.A, prefix=self.hosts.exec_prefix(0))

    def start_in(self, i, name, nproc, mode, **kwargs):
        agent = self.start(name, self.hosts.addrs[i], nproc, mode, **kwargs)
        return agent

    def start(self, name, addr, nproc, mode, **kwargs):
        i = self.hosts.addrs.index(addr)
        kwargs.setdefault("prefix", self.hosts.exec_prefix(i))
        return super().start(name, addr, nproc, mode, **kwargs)

    def test_gloo_training_across_two_namespaced_nodes(self):
        # Gloo must use the veth, not the hostname's address.
        env = {"DDPRUN_PYTHON": "/usr/bin/python3", "GLOO_SOCKET_IFNAME": netns.IFNAME}
        prog = [TORCH_WORKER]
        a = self.start("a", self.A, 2, "ok", env_extra=env, program=prog)
        b = self.start("b", self.B, 2, "ok", env_extra=env, program=prog)
        self.assertEqual(a.wait(90), 0, a.stderr() + a.stdout())
        self.assertEqual(b.wait(90), 0, b.stderr() + b.stdout())
        sums = re.findall(r"allreduce rank (\d) of 4 sum (\S+)", a.stdout() + b.stdout())
        self.assertEqual(sorted(int(r) for r, _ in sums), [0, 1, 2, 3])
        self.assertEqual({s for _, s in sums}, {"6.0"})

    def test_partitioned_node_is_dropped_and_stops_its_workers(self):
        # The lease (6 s) is far longer than the presence silence check (1 s): a re-formed
        # round within a few seconds can only come from the check (no socket closes here).
        env = {"SMALL": "2"}
        conf = "last_call_timeout=30,join_timeout=20,lease_ttl=6,presence_timeout=1"
        a = self.start("a", self.A, 2, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: "coordinating job" in a.stderr(), 10, "a coordinating")
        b = self.start("b", self.B, 2, "wait_big", nnodes="1:2", env_extra=env, conf=conf)
        wait_for(lambda: len(self.started()) == 4, 20, "4 workers of round 1")
        cut = time.monotonic()
        self.hosts.link_down(1)  # b loses etcd and a, and acknowledges nothing any more
        wait_for(lambda: "stopped acknowledging" in a.stderr(), 5, "a noticing b's silence")
        noticed = time.monotonic() - cut
        self.assertEqual(a.wait(), 0, a.stderr())
        caught = time.monotonic() - cut
        self.assertEqual(b.wait(), 1, b.stderr())
        b_out = time.monotonic() - cut
        print("partition -> a noticed: %.2f s; a finished at MIN: %.2f s; cut-off b exited: "
              "%.2f s" % (noticed, caught, b_out), file=sys.stderr)
        self.assertLess(noticed, 4)  # presence_timeout + a beat, far below the 6 s lease
        self.assertRegex(a.stderr(), r"node \S+ is gone \(its machine stopped acknowledging "
                                     r"its presence connection for 1 s")
        self.assertLess(b_out, 6 + 6)  # the lease TTL, then its workers' stop
        self.assertIn("lost etcd", b.stderr())
        self.assertTrue([n for n in os.listdir(self.marks) if n.startswith("stopped.")])
        last = [r for r in self.env_lines(a.stdout()) if r["WORLD_SIZE"] == "2"]
        self.assertEqual(sorted(int(r["RANK"]) for r in last), [0, 1])


class EtcdClusterTest(EtcdCase):
    MEMBERS = 3

    def test_leader_killed_mid_job_the_job_goes_on(self):
        env = {"SMALL": "0"}  # wait_big: wait for SIGTERM, then exit 0 when told to stop
        a = self.start("a", self.A, 1, "fail_b", extra=["--max-restarts", "1"])
        b = self.start("b", self.B, 1, "fail_b", extra=["--max-restarts", "1"])
        wait_for(lambda: len(self.started()) == 2, 20, "round 1")
        leader = self.etcd.leader()
        self.assertIsNotNone(leader)
        self.etcd.kill(leader)
        # fail_b: group rank 1 fails 0.3 s in, after the leader died; the job restarts once
        # through the remaining quorum and then succeeds.
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(r["RC"] for r in rows), ["0", "0", "1", "1"])


if __name__ == "__main__":
    DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
