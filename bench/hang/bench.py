"""Hang benchmark: torchrun 1.13 and ddprun serving the same file timer, side by side.

usage: bench.py DDPRUN [--repeats N]
Two workers; rank 1 arms a 2 s timer (PyTorch's FileTimerClient) and stalls. Measured per
run, from the timer's expiry: the stalled worker's death (its pidfd becomes readable), and
the last worker's death (the whole group stopped). Both launchers at their defaults
(torchrun: --monitor_interval 5, its file timer checks every 0.1 s). ddprun first takes every
worker's stack (faulthandler), then kills. Prints a markdown table with medians and ratios.
"""
import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
TORCHRUN = [PYTHON, os.path.join(HERE, "..", "launch", "torchrun_compat.py")]
WORKER = os.path.join(HERE, "timer_worker.py")
CAP_S = 60.0


def wait_file(path, deadline):
    while time.monotonic() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path) as f:
                return f.read()
        time.sleep(0.005)
    raise RuntimeError("no " + path)


def one_run(cmd, env):
    with tempfile.TemporaryDirectory(prefix="ddp_bench_hang_") as out:
        proc = subprocess.Popen([*cmd, WORKER, out], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + CAP_S
            pids = [int(wait_file(os.path.join(out, "pid_%d" % r), deadline)) for r in (0, 1)]
            expiry = float(wait_file(os.path.join(out, "expiry"), deadline))
            fds = {os.pidfd_open(pid): r for r, pid in enumerate(pids)}
            died = {}
            poller = select.poll()
            for fd in fds:
                poller.register(fd, select.POLLIN)
            while len(died) < 2 and time.monotonic() < deadline:
                for fd, _ in poller.poll(100):
                    died[fds[fd]] = time.time()
                    poller.unregister(fd)
            for fd in fds:
                os.close(fd)
            if len(died) < 2:
                return None
            return died[1] - expiry, max(died.values()) - expiry
        finally:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ddprun")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, TORCHELASTIC_ENABLE_FILE_TIMER="1", DDPRUN_PYTHON=PYTHON)
    env.pop("TORCHELASTIC_TIMER_FILE", None)
    launchers = {
        "torchrun 1.13": TORCHRUN + ["--nproc_per_node", "2"],
        "ddprun": [args.ddprun, "--nproc-per-node", "2"],
    }
    results = {name: [] for name in launchers}
    for _ in range(args.repeats):  # alternate, so both see the same machine
        for name, cmd in launchers.items():
            r = one_run(cmd, env)
            results[name].append(r)
            print("%s: %s" % (name, "timed out" if r is None else
                                "killed +%.3f s, group stopped +%.3f s" % r), file=sys.stderr)
    print("| measure (from the timer's expiry, median of %d) | torchrun 1.13 | ddprun | ratio |"
          % args.repeats)
    print("|---|---|---|---|")
    for i, what in enumerate(("stalled worker killed", "every worker stopped")):
        t = [r[i] for r in results["torchrun 1.13"] if r]
        d = [r[i] for r in results["ddprun"] if r]
        tm = statistics.median(t) if t else float("nan")
        dm = statistics.median(d) if d else float("nan")
        print("| %s | %.3f s | %.3f s | %.1fx sooner |" % (what, tm, dm, tm / dm if dm else 0))
    for name, runs in results.items():
        missing = sum(1 for r in runs if r is None)
        if missing:
            print("\n%s: %d run(s) did not stop the group within %d s" % (name, missing, CAP_S))


if __name__ == "__main__":
    main()
