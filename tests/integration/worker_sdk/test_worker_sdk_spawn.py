"""ddp::spawn of the C++ worker SDK with real processes and signals (sdk_probe spawn, started
bare: no ddprun, no worker environment): workers joined through the parent's store, the
two-node driver's rank arithmetic, the first failure or a signal stopping the others, Ctrl-C
on the parent; no worker outlives its parent.

Usage: test_worker_sdk_spawn.py --probe BIN --train BIN --interop BIN --python-rank SCRIPT
       [--ddprun BIN] [unittest args]
"""
import json
import os
import signal
import sys

import sdk_case
from sdk_case import SdkCase, free_port

ARGS = None


class WorkerSdkTest(SdkCase):
    # ddp::spawn: sdk_probe spawn N WHAT, started bare (no ddprun, no worker environment).
    def spawn_probe(self, *args):
        return self.start([ARGS.probe, "spawn", *args], dict(os.environ, OMP_NUM_THREADS="1"))

    def ready_pids(self, w, count):
        return [json.loads(w.wait_line(r'"pid"'))["pid"] for _ in range(count)]

    def assert_gone(self, pids):
        for pid in pids:  # reaped by the parent before it returned: no zombie either
            with self.assertRaises(ProcessLookupError, msg=f"worker {pid} outlived the parent"):
                os.kill(pid, 0)

    def test_spawn_runs_workers_joined_through_the_parents_store(self):
        w = self.spawn_probe("3", "allreduce")
        self.assertEqual(w.finish(), 0, w.stderr)
        docs = sorted((json.loads(l) for l in w.seen), key=lambda d: d["rank"])
        self.assertEqual(docs, [{"rank": r, "world": 3, "sum": 6.0, "restart": 0} for r in range(3)])

    def test_spawn_two_node_driver_arithmetic(self):
        # The tutorials' --nodes 2 --gpus 2 --nr i driver, both "nodes" on this machine.
        port = free_port()
        nodes = [self.start([ARGS.probe, "spawn-node", "2", str(nr), str(port), "2"],
                            dict(os.environ, OMP_NUM_THREADS="1")) for nr in (0, 1)]
        for w in nodes:
            self.assertEqual(w.finish(), 0, w.stderr)
        ranks = [sorted(json.loads(l)["rank"] for l in w.seen) for w in nodes]
        self.assertEqual(ranks, [[0, 1], [2, 3]])  # rank = nr x gpus + local rank
        for w in nodes:
            self.assertTrue(all(json.loads(l)["sum"] == 10.0 and json.loads(l)["world"] == 4
                                for l in w.seen), w.seen)

    def test_spawn_first_failure_stops_the_others(self):
        w = self.spawn_probe("3", "fail", "1", "7")
        pids = self.ready_pids(w, 3)
        self.assertEqual(w.finish(), 7, w.stderr)
        self.assertRegex(w.stderr, r"ddp::spawn: rank 1 \(local rank 1, pid \d+\) exited with code 7; "
                                   r"stopped the other workers")
        self.assert_gone(pids)

    def test_spawn_worker_killed_by_a_signal(self):
        w = self.spawn_probe("2", "signal", "1", str(int(signal.SIGKILL)))
        pids = self.ready_pids(w, 2)
        self.assertEqual(w.finish(), 128 + signal.SIGKILL, w.stderr)
        self.assertRegex(w.stderr, r"rank 1 \(local rank 1, pid \d+\) was killed by signal 9")
        self.assert_gone(pids)

    def test_spawn_ctrl_c_on_the_parent_stops_every_worker(self):
        w = self.spawn_probe("2", "hang")
        pids = self.ready_pids(w, 2)
        w.proc.send_signal(signal.SIGINT)
        self.assertEqual(w.finish(), 128 + signal.SIGINT, w.stderr)
        self.assertIn("ddp::spawn: interrupted by signal 2 (Interrupt); stopped the workers", w.stderr)
        self.assert_gone(pids)


if __name__ == "__main__":
    ARGS, rest = sdk_case.parse_args()
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
