"""Launch benchmark: ddprun against torchrun, side by side in one run.

usage: bench.py DDPRUN [--repeats N]
Measures, for each launcher: wall time to launch N trivial workers (`true`) and finish
(N = 4, 16; median of repeats), the launcher's peak RSS (ru_maxrss of the launcher
process, from GNU time), and restart latency (a worker of attempt 0 fails; the time from its last moment
to the moment every worker of attempt 1 runs, from bash's $EPOCHREALTIME in the workers).
Prints a markdown table with ratios.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
TORCHRUN = [PYTHON, os.path.join(HERE, "torchrun_compat.py"), "--monitor_interval", "0.1"]

# attempt 0: rank 0 stamps and fails, the others wait to be stopped; attempt 1: everyone
# stamps its start and exits 0.
RESTART_WORKER = r'''
out="$1"
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  if [ "$LOCAL_RANK" = 0 ]; then echo "$EPOCHREALTIME" > "$out/fail"; exit 1; fi
  exec sleep 30
fi
echo "$EPOCHREALTIME" > "$out/start_$LOCAL_RANK"
'''


def run_measured(cmd):
    """Runs cmd under GNU time, returns (wall seconds, peak RSS in MB, exit code). GNU time
    (a small C program) reports the launcher's ru_maxrss; measuring from this Python process
    would count Python's own pages, which a child keeps as its high-water mark across exec."""
    with tempfile.NamedTemporaryFile(prefix="ddp_bench_rss_") as rss:
        start = time.monotonic()
        code = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - start
        kb = int(open(rss.name).read().split()[-1])
    return wall, kb / 1024.0, code


def launch_cmd(launcher, n, argv, restarts=0):
    if launcher == "ddprun":
        return [DDPRUN, "--nproc-per-node", str(n), "--max-restarts", str(restarts),
                "--no-python", *argv]
    return [*TORCHRUN, "--nproc_per_node", str(n), "--max_restarts", str(restarts),
            "--no_python", *argv]


def launch(launcher, n, repeats):
    walls, rss = [], []
    for _ in range(repeats):
        wall, mb, code = run_measured(launch_cmd(launcher, n, ["true"]))
        if code != 0:
            sys.exit("%s failed with exit code %d" % (launcher, code))
        walls.append(wall)
        rss.append(mb)
    return statistics.median(walls), max(rss)


def restart(launcher, repeats):
    lat = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="ddp_bench_") as out:
            cmd = launch_cmd(launcher, 4, ["bash", "-c", RESTART_WORKER, "worker", out], 1)
            _, _, code = run_measured(cmd)
            if code != 0:
                sys.exit("%s restart run failed with exit code %d" % (launcher, code))
            with open(os.path.join(out, "fail")) as f:
                failed = float(f.read())
            starts = []
            for r in range(4):
                with open(os.path.join(out, "start_%d" % r)) as f:
                    starts.append(float(f.read()))
            lat.append(max(starts) - failed)
    return statistics.median(lat)


def main():
    global DDPRUN
    ap = argparse.ArgumentParser()
    ap.add_argument("ddprun")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    DDPRUN = os.path.abspath(args.ddprun)
    results = {}
    for launcher, reps in (("ddprun", args.repeats * 4), ("torchrun", args.repeats)):
        w4, r4 = launch(launcher, 4, reps)
        w16, r16 = launch(launcher, 16, reps)
        results[launcher] = {"w4": w4, "w16": w16, "rss": max(r4, r16),
                             "restart": restart(launcher, reps)}
    d, t = results["ddprun"], results["torchrun"]
    print("| measure | torchrun 1.13 | ddprun | ratio | goal |")
    print("|---|---|---|---|---|")
    print("| launch 4 x `true` (wall, median) | %.3f s | %.4f s | %.0fx faster | >= 30x |"
          % (t["w4"], d["w4"], t["w4"] / d["w4"]))
    print("| launch 16 x `true` (wall, median) | %.3f s | %.4f s | %.0fx faster | >= 30x |"
          % (t["w16"], d["w16"], t["w16"] / d["w16"]))
    print("| launcher peak RSS | %.0f MB | %.1f MB | 1/%.0f | <= 1/20 |"
          % (t["rss"], d["rss"], t["rss"] / d["rss"]))
    print("| restart latency (failure -> 4 workers running) | %.0f ms | %.1f ms | %.0fx faster"
          " | <= 20 ms |" % (t["restart"] * 1e3, d["restart"] * 1e3, t["restart"] / d["restart"]))
    print("\ntorchrun: %s (--monitor_interval 0.1); %d repeats for torchrun, %d for ddprun"
          % (" ".join(TORCHRUN[:2]), args.repeats, args.repeats * 4))


if __name__ == "__main__":
    main()
