"""The agent's event log (--event-log, docs/event_log.md) of real ddprun runs, read back line by
line and checked key by key: one node failing once then succeeding, a root cause with an error
file, stderr, refused paths, a hung worker, a c10d pair on loopback, an etcd pair (skipped
where etcd is not installed).

usage: test_event_log.py DDPRUN [TestClass]
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
from agents import AgentsCase  # noqa: E402
from procs import free_port  # noqa: E402

DDPRUN = None
WORKER = os.path.join(HERE, "worker.py")
NODE_WORKER = os.path.join(HERE, "..", "multinode", "worker.sh")
PYTHON = "/usr/bin/python3"
DEADLINE_S = 60
HEADER = ["ts", "ts_unix", "event", "run_id", "host", "agent_pid", "round", "restart_count",
          "group_rank"]
# A worker that beats once (docs/hangs.md's snippet) and then stalls.
HANG_WORKER = ("import os, time\n"
               "beat = open(os.environ['DDPRUN_HEARTBEAT_FILE'], 'w', buffering=1)\n"
               "print(0, file=beat)\n"
               "time.sleep(3600)  # the stall\n")


def read_events(path):
    with open(path) as f:
        return parse_events(f.read())


def parse_events(text):
    """Every line of `text` that is an event, parsed; the key order checked."""
    events = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        keys = list(json.loads(line, object_pairs_hook=lambda pairs: pairs))
        keys = [k for k, _ in keys]
        assert keys[:len(HEADER)] == HEADER, keys
        events.append(json.loads(line))
    return events


def names(events):
    return [e["event"] for e in events]


class Checks(unittest.TestCase):
    def check_common(self, events, run_id):
        """Every line: the run id, this host, one agent pid, a well-formed time that never goes
        back and agrees with ts_unix."""
        self.assertTrue(events)
        pids = {e["agent_pid"] for e in events}
        self.assertEqual(len(pids), 1)
        last = 0.0
        for e in events:
            self.assertEqual(e["run_id"], run_id)
            self.assertEqual(e["host"], os.uname().nodename)
            stamp = datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
            self.assertEqual(len(e["ts"]), len("2026-11-24T22:35:00.123Z"))
            stamp = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
            self.assertAlmostEqual(stamp, e["ts_unix"], places=3)
            self.assertGreaterEqual(e["ts_unix"], last)
            last = e["ts_unix"]

    def assert_in_order(self, events, expected):
        """`expected` (event names) appear in this order, others may come between."""
        got = names(events)
        i = 0
        for name in got:
            if i < len(expected) and name == expected[i]:
                i += 1
        self.assertEqual(i, len(expected), "wanted %s in order, got %s" % (expected, got))


class SingleNodeBase(Checks):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ddp_event_log_it_")
        self.out = os.path.join(self.tmp.name, "out")
        os.mkdir(self.out)
        self.log = os.path.join(self.tmp.name, "events.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def env(self):
        return dict(os.environ, TMPDIR=self.tmp.name)

    def run_ddprun(self, nproc, mode, *mode_args, extra=(), program=None):
        program = program or ["--no-python", PYTHON, WORKER, self.out, mode,
                              *[str(a) for a in mode_args]]
        return subprocess.run([DDPRUN, "--nproc-per-node", str(nproc), *extra, *program],
                              env=self.env(), capture_output=True, timeout=DEADLINE_S)

    def record(self, attempt, rank):
        with open(os.path.join(self.out, "a%d_r%d.json" % (attempt, rank))) as f:
            return json.load(f)

    def check_refused(self, path, *needles):
        r = self.run_ddprun(2, "ok", extra=["--event-log", path])
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertTrue(err.startswith("ddprun: error: --event-log " + path), err)
        for needle in needles:
            self.assertIn(needle, err)
        self.assertEqual(os.listdir(self.out), [], "a worker was started")


class EventLogTest(SingleNodeBase):
    def test_failure_then_restart_then_success(self):
        r = self.run_ddprun(2, "fail_once", 1, extra=["--max-restarts", "1", "--rdzv-id", "ev-1",
                                                      "--event-log", self.log])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        events = read_events(self.log)
        self.check_common(events, "ev-1")
        self.assert_in_order(events, ["join", "round", "workers_started", "worker_exited",
                                      "workers_done", "restart", "round", "workers_started",
                                      "workers_done", "finish"])
        self.assertEqual(names(events)[0], "join")
        self.assertEqual(names(events)[-1], "finish")
        self.assertEqual(names(events).count("worker_exited"), 4)
        join = events[0]
        self.assertEqual(join["backend"], "local")
        self.assertIsNone(join["endpoint"])
        self.assertEqual((join["min_nodes"], join["max_nodes"]), (1, 1))
        self.assertEqual(join["nproc_per_node"], 2)
        self.assertEqual(join["max_restarts"], 1)
        self.assertIsNone(join["round"])

        rounds = [e for e in events if e["event"] == "round"]
        self.assertEqual([(e["round"], e["restart_count"], e["group_rank"]) for e in rounds],
                         [(1, 0, 0), (2, 1, 0)])
        for e in rounds:
            self.assertEqual(e["world_size"], 2)
            self.assertEqual(e["group_world_size"], 1)
            self.assertEqual(e["rank_offset"], 0)
            self.assertEqual(e["store_addr"], "127.0.0.1")
            self.assertGreater(e["store_port"], 0)
            self.assertEqual(e["store_port"], int(self.record(e["restart_count"], 0)["env"]
                                                  ["MASTER_PORT"]))

        # The pids are the workers' own (each wrote its pid), by rank, in both attempts.
        started = [e for e in events if e["event"] == "workers_started"]
        self.assertEqual([e["attempt"] for e in started], [0, 1])
        for e in started:
            self.assertEqual([(w["local_rank"], w["rank"]) for w in e["workers"]], [(0, 0), (1, 1)])
            for w in e["workers"]:
                self.assertEqual(w["pid"], self.record(e["attempt"], w["rank"])["pid"])

        first_round = [e for e in events if e["round"] == 1]
        exits = {e["rank"]: e for e in first_round if e["event"] == "worker_exited"}
        self.assertEqual(exits[1]["exit_code"], 1)
        self.assertIsNone(exits[1]["signal"])
        self.assertEqual(exits[1]["local_rank"], 1)
        self.assertEqual(exits[1]["pid"], self.record(0, 1)["pid"])
        # Rank 0 of fail_once ends at once, unless rank 1's failure stops it first.
        self.assertTrue(exits[0]["exit_code"] == 0 or exits[0]["signal"] == "SIGTERM", exits[0])
        self.assertEqual(exits[0]["pid"], self.record(0, 0)["pid"])

        done = [e for e in events if e["event"] == "workers_done"]
        self.assertEqual([d["outcome"] for d in done], ["failed", "succeeded"])
        failure = done[0]["failures"][0]
        self.assertEqual((failure["rank"], failure["local_rank"], failure["exit_code"]), (1, 1, 1))
        self.assertEqual(failure["host"], os.uname().nodename)
        self.assertEqual(failure["pid"], self.record(0, 1)["pid"])
        self.assertEqual(done[1]["failures"], [])

        restart = next(e for e in events if e["event"] == "restart")
        self.assertEqual((restart["round"], restart["restart_count"]), (2, 1))
        self.assertEqual((restart["previous_round"], restart["previous_restart_count"]), (1, 0))
        self.assertTrue(restart["counted"])
        self.assertNotIn("failure", names(events))  # the job did not fail
        finish = events[-1]
        self.assertEqual((finish["exit_code"], finish["why"]), (0, "job_finished"))
        self.assertEqual((finish["round"], finish["restart_count"]), (2, 1))

    def test_root_cause_with_error_file_and_exit_code(self):
        logs = os.path.join(self.tmp.name, "logs")
        r = self.run_ddprun(2, "errorfile", 1, 5, extra=["--event_log", self.log, "--log-dir", logs])
        self.assertEqual(r.returncode, 5, r.stderr.decode())
        events = read_events(self.log)
        self.check_common(events, "none")
        self.assert_in_order(events, ["join", "round", "workers_started", "worker_exited",
                                      "workers_done", "failure", "finish"])
        exits = [e for e in events if e["event"] == "worker_exited"]
        by_rank = {e["rank"]: e for e in exits}
        self.assertEqual(by_rank[1]["exit_code"], 5)
        self.assertEqual(by_rank[0]["signal"], "SIGTERM")  # stopped by the agent
        self.assertIsNone(by_rank[0]["exit_code"])
        failure = next(e for e in events if e["event"] == "failure")
        self.assertEqual(failure["exit_code"], 5)
        root = failure["root_cause"]
        self.assertEqual((root["rank"], root["local_rank"], root["exit_code"]), (1, 1, 5))
        self.assertIsNone(root["signal"])
        self.assertEqual(root["host"], os.uname().nodename)
        self.assertEqual(root["pid"], self.record(0, 1)["pid"])
        self.assertEqual(root["message"], "CUDA out of memory in layer 7 (written by a C worker)")
        self.assertEqual(root["error_file"], os.path.join(logs, "attempt_0", "1", "error.json"))
        datetime.datetime.strptime(root["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        self.assertEqual((events[-1]["exit_code"], events[-1]["why"]), (5, "job_finished"))

    def test_appends_to_an_existing_log(self):
        with open(self.log, "w") as f:
            f.write('{"earlier": true}\n')
        for _ in range(2):
            r = self.run_ddprun(1, "ok", extra=["--event-log", self.log])
            self.assertEqual(r.returncode, 0, r.stderr.decode())
        with open(self.log) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], '{"earlier": true}')
        events = parse_events("\n".join(lines[1:]))
        self.assertEqual(names(events).count("join"), 2)
        self.assertEqual(names(events).count("finish"), 2)

    def test_host_in_the_path_becomes_this_machines_name(self):
        pattern = os.path.join(self.tmp.name, "events.{host}.jsonl")
        r = self.run_ddprun(1, "ok", extra=["--event-log", pattern])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        path = os.path.join(self.tmp.name, "events.%s.jsonl" % os.uname().nodename)
        self.assertEqual(read_events(path)[-1]["event"], "finish")

    def test_dash_writes_to_stderr_and_pet_variable(self):
        r = self.run_ddprun(2, "ok", extra=["--event-log", "-"])
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        events = parse_events(r.stderr.decode())
        self.assertEqual(names(events)[0], "join")
        self.assertEqual(events[-1]["event"], "finish")
        self.assertNotIn(b'"event"', r.stdout)
        env = dict(self.env(), PET_EVENT_LOG=self.log)
        r = subprocess.run([DDPRUN, "--no-python", "true"], env=env, capture_output=True,
                           timeout=DEADLINE_S)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(read_events(self.log)[-1]["event"], "finish")

    def test_without_the_option_nothing_is_written(self):
        r = self.run_ddprun(1, "ok")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertNotIn(b'"event"', r.stderr)


class EventLogRefusedTest(SingleNodeBase):
    def test_missing_directory(self):
        missing = os.path.join(self.tmp.name, "no", "such")
        self.check_refused(os.path.join(missing, "events.jsonl"), "No such file or directory",
                           "create the directory " + missing)

    def test_a_directory(self):
        self.check_refused(self.tmp.name, "Is a directory", "name a file in that directory")

    def test_under_a_file(self):
        plain = os.path.join(self.tmp.name, "plain")
        with open(plain, "w") as f:
            f.write("x")
        self.check_refused(os.path.join(plain, "events.jsonl"), "Not a directory")

    def test_empty(self):
        r = self.run_ddprun(1, "ok", extra=["--event-log", ""])
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("--event-log is empty", r.stderr.decode())


# Its own class: where it cannot run (as root) CTest shows it Skipped without hiding the rest.
class EventLogPermissionTest(SingleNodeBase):
    def test_permission_denied(self):
        if os.geteuid() == 0:
            self.skipTest("root may write any file: nothing to refuse")
        locked = os.path.join(self.tmp.name, "locked")
        os.mkdir(locked, 0o500)
        try:
            self.check_refused(os.path.join(locked, "events.jsonl"), "Permission denied")
        finally:
            os.chmod(locked, 0o700)


class EventLogHangTest(SingleNodeBase):
    def test_the_hang_and_the_failure_name_the_stalled_worker(self):
        r = self.run_ddprun(1, "", extra=["--hang-timeout", "1s", "--event-log", self.log,
                                          "--shutdown-timeout", "2"],
                            program=["--no-python", PYTHON, "-c", HANG_WORKER])
        self.assertEqual(r.returncode, 124, r.stderr.decode())
        events = read_events(self.log)
        self.assert_in_order(events, ["workers_started", "workers_hung", "worker_exited",
                                      "workers_done", "failure", "finish"])
        hung = next(e for e in events if e["event"] == "workers_hung")
        self.assertEqual(hung["kind"], "silent")
        self.assertEqual(hung["local_ranks"], [0])
        self.assertIn("rank 0 last beat at step 0", hung["descriptions"][0])
        exited = next(e for e in events if e["event"] == "worker_exited")
        self.assertEqual(exited["signal"], "SIGKILL")
        root = next(e for e in events if e["event"] == "failure")["root_cause"]
        self.assertEqual(root["exit_code"], 124)
        self.assertEqual(root["rank"], 0)
        self.assertTrue(root["message"].startswith("hung: rank 0 last beat at step 0"),
                        root["message"])
        self.assertEqual(events[-1]["exit_code"], 124)


class PairBase(AgentsCase, Checks):
    """Two agents on loopback (127.0.0.2 and .3), each with its own event log; worker.sh of the
    multi-node tests: in fail_b, group rank 1's first worker exits 3 in the first attempt."""
    A, B = "127.0.0.2", "127.0.0.3"
    AGENT_TIMEOUT_S = DEADLINE_S
    TMP_PREFIX = "ddp_event_log_pair_"

    def start(self, name, addr, rdzv, extra=()):
        env = dict(os.environ, MODE="fail_b", MARK_DIR=self.marks)
        args = [DDPRUN, "--nnodes", "2", "--nproc-per-node", "2", *rdzv, "--rdzv-id", "pair",
                "--local-addr", addr, "--shutdown-timeout", "5", "--max-restarts", "1",
                "--event-log", os.path.join(self.tmp, name + ".jsonl"), *extra,
                "--no-python", NODE_WORKER]
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
                "last_call_timeout=0.2,keep_alive_interval=0.2,join_timeout=20"]
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
    DDPRUN = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
