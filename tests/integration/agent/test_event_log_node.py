"""One node's event log of real ddprun runs, read back line by line and checked key by key:
failing once then succeeding, a root cause with an error file, appending to a log, {host} in
the path, "-" for stderr and PET_EVENT_LOG, no option no log, and a hung worker.

usage: test_event_log_node.py DDPRUN [TestClass]
"""
import datetime
import os
import subprocess
import sys

import event_log_case
from event_log_case import DEADLINE_S, PYTHON, SingleNodeBase, names, parse_events, read_events

# A worker that beats once (docs/hangs.md's snippet) and then stalls.
HANG_WORKER = ("import os, time\n"
               "beat = open(os.environ['DDPRUN_HEARTBEAT_FILE'], 'w', buffering=1)\n"
               "print(0, file=beat)\n"
               "time.sleep(3600)  # the stall\n")


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
        r = subprocess.run([event_log_case.DDPRUN, "--no-python", "true"], env=env,
                           capture_output=True, timeout=DEADLINE_S)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(read_events(self.log)[-1]["event"], "finish")

    def test_without_the_option_nothing_is_written(self):
        r = self.run_ddprun(1, "ok")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertNotIn(b'"event"', r.stderr)


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


if __name__ == "__main__":
    event_log_case.DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
