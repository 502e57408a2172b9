"""The event logs of a two-node job, one per agent: a failure on one node, the job-wide restart
and the finish, through the c10d backend on loopback and through etcd (skipped where etcd is
not installed).

usage: test_event_log_pair.py DDPRUN [TestClass]
"""
import os
import sys

import event_log_case
from event_log_case import DEADLINE_S, HERE, Checks, names, read_events
import etcd  # noqa: E402  (event_log_case put testlib on the path)
from agents import AgentsCase  # noqa: E402
from procs import free_port  # noqa: E402

NODE_WORKER = os.path.join(HERE, "..", "multinode", "worker.sh")


class PairBase(AgentsCase, Checks):
    """Two agents on loopback (127.0.0.2 and .3), each with its own event log; worker.sh of the
    multi-node tests: in fail_b, group rank 1's first worker exits 3 in the first attempt."""
    A, B = "127.0.0.2", "127.0.0.3"
    AGENT_TIMEOUT_S = DEADLINE_S
    TMP_PREFIX = "ddp_event_log_pair_"

    def start(self, name, addr, rdzv, extra=()):
        env = dict(os.environ, MODE="fail_b", MARK_DIR=self.marks)
        args = [event_log_case.DDPRUN, "--nnodes", "2", "--nproc-per-node", "2", *rdzv,
                "--rdzv-id", "pair", "--local-addr", addr, "--shutdown-timeout", "5",
                "--max-restarts", "1", "--event-log", os.path.join(self.tmp, name + ".jsonl"),
                *extra, "--no-python", NODE_WORKER]
        return self.spawn(name, args, env)

    def check_pair(self, backend, endpoint):
        a, b = self.agents
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        logs = {name: read_events(os.path.join(self.tmp, name + ".jsonl")) for name in "ab"}
        group_ranks = set()
        failed_on = []
        for name, events in logs.items():
            self.check_common(events, "pair")
            self.assert_in_order(events, ["join", "round", "workers_started", "workers_done",
                                          "restart", "round", "workers_started", "workers_done",
                                          "finish"])
            join = events[0]
            self.assertEqual(join["backend"], backend)
            self.assertEqual(join["endpoint"], endpoint)
            self.assertEqual((join["min_nodes"], join["max_nodes"]), (2, 2))
            rounds = [e for e in events if e["event"] == "round"]
            self.assertEqual([e["restart_count"] for e in rounds], [0, 1])
            self.assertEqual(len({e["group_rank"] for e in rounds}), 1)
            group_rank = rounds[0]["group_rank"]
            group_ranks.add(group_rank)
            for e in rounds:
                self.assertEqual((e["world_size"], e["group_world_size"]), (4, 2))
                self.assertEqual(e["rank_offset"], 2 * e["group_rank"])
            for s in (e for e in events if e["event"] == "workers_started"):
                ranks = [w["rank"] for w in s["workers"]]
                self.assertEqual(ranks, [2 * s["group_rank"], 2 * s["group_rank"] + 1])
                self.assertTrue(all(w["pid"] > 0 for w in s["workers"]))
            exits = [e for e in events if e["event"] == "worker_exited" and e["restart_count"] == 0]
            self.assertEqual(len(exits), 2)
            if any(e["exit_code"] == 3 for e in exits):
                failed_on.append(name)
                culprit = next(e for e in exits if e["exit_code"] == 3)
                self.assertEqual((culprit["local_rank"], culprit["rank"]), (0, 2))
                self.assertEqual(culprit["group_rank"], 1)
                done = next(e for e in events if e["event"] == "workers_done")
                self.assertEqual(done["outcome"], "failed")
                self.assertEqual(done["failures"][0]["rank"], 2)
                self.assertEqual(done["failures"][0]["exit_code"], 3)
            else:
                # The other node's workers were stopped for the job: SIGTERM, exit 143.
                self.assertIn("stop_requested", names(events))
                self.assertTrue(all(e["exit_code"] == 143 or e["signal"] == "SIGTERM"
                                    for e in exits), exits)
            restart = next(e for e in events if e["event"] == "restart")
            self.assertTrue(restart["counted"])
            self.assertEqual((events[-1]["event"], events[-1]["exit_code"]), ("finish", 0))
        self.assertEqual(group_ranks, {0, 1})
        self.assertEqual(len(failed_on), 1)


class EventLogC10dTest(PairBase):
    def test_both_nodes_log_the_failure_restart_and_finish(self):
        endpoint = "127.0.0.1:%d" % free_port()
        rdzv = ["--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-conf",
                "last_call_timeout=0.2,join_timeout=20"]
        a = self.start("a", self.A, rdzv)
        self.wait_hosting(a)
        self.start("b", self.B, rdzv)
        self.check_pair("c10d", endpoint)


class EventLogEtcdTest(PairBase):
    def test_both_nodes_log_the_failure_restart_and_finish(self):
        try:
            cluster = etcd.Cluster(1)
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(cluster.stop)
        rdzv = ["--rdzv-backend", "etcd", "--rdzv-endpoint", cluster.endpoints(), "--rdzv-conf",
                "last_call_timeout=0.2,join_timeout=20,lease_ttl=2"]
        self.start("a", self.A, rdzv)
        self.start("b", self.B, rdzv)
        self.check_pair("etcd", cluster.endpoints())


if __name__ == "__main__":
    event_log_case.DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
