"""Launch benchmark: ddprun against torchrun 2.x and 1.13, side by side in one run.

usage: bench.py DDPRUN [--repeats N] [--peers 2.14,2.6,1.13]
--peers: which torchruns to run beside ddprun (default all three): 2.14 is Debian sid's
python3-torch in the root `scripts/debian_root.sh sid` makes, run through scripts/torch214-py;
2.6 is Debian 13's in the root scripts/debian_root.sh makes, run through scripts/torch2-python
(each a chroot: three execs before Python starts). Both 2.x run torchrun2_compat.py (their
builds have no libuv). 1.13 is the host's python3-torch through torchrun_compat.py (Python 3.11
fix). All with --monitor_interval 0.1 and otherwise torchrun's defaults: on one node 2.14 uses
the c10d rendezvous on localhost:0, 2.6 and 1.13 the static one on port 29500.
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
SCRIPTS = os.path.normpath(os.path.join(HERE, "..", "..", "scripts"))
TORCHRUN2 = [os.path.join(HERE, "torchrun2_compat.py"), "--monitor_interval", "0.1"]
TORCHRUNS = {
    "2.14": [os.path.join(SCRIPTS, "torch214-py"), *TORCHRUN2],
    "2.6": [os.path.join(SCRIPTS, "torch2-python"), *TORCHRUN2],
    "1.13": [PYTHON, os.path.join(HERE, "torchrun_compat.py"), "--monitor_interval", "0.1"],
}

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
    return [*TORCHRUNS[launcher], "--nproc_per_node", str(n), "--max_restarts", str(restarts),
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


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    global DDPRUN
    ap = argparse.ArgumentParser()
    ap.add_argument("ddprun")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--peers", default=",".join(TORCHRUNS),
                    help="torchrun versions, comma-separated: any of " + ", ".join(TORCHRUNS))
    args = ap.parse_args()
    DDPRUN = os.path.abspath(args.ddprun)
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in TORCHRUNS:
            sys.exit("--peers: %s is not one of %s" % (p, ", ".join(TORCHRUNS)))
    load_before = loadavg()
    results = {}
    for launcher in ["ddprun", *peers]:
        reps = args.repeats * 4 if launcher == "ddprun" else args.repeats
        w4, r4 = launch(launcher, 4, reps)
        w16, r16 = launch(launcher, 16, reps)
        results[launcher] = {"w4": w4, "w16": w16, "rss": max(r4, r16),
                             "restart": restart(launcher, reps)}
    d = results["ddprun"]
    head = "| measure | " + " | ".join("torchrun " + p for p in peers) + " | ddprun | " + \
        " | ".join("ratio to " + p for p in peers) + " | goal |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")

    def row(label, fmt_peer, fmt_ddp, key, ratio, goal):
        cells = [fmt_peer % (results[p][key] * (1e3 if key == "restart" else 1)) for p in peers]
        ratios = [ratio(results[p][key], d[key]) for p in peers]
        print("| %s | %s | %s | %s | %s |" % (
            label, " | ".join(cells), fmt_ddp % (d[key] * (1e3 if key == "restart" else 1)),
            " | ".join(ratios), goal))

    faster = lambda t, x: "%.0fx faster" % (t / x)
    row("launch 4 x `true` (wall, median)", "%.3f s", "%.4f s", "w4", faster, ">= 30x")
    row("launch 16 x `true` (wall, median)", "%.3f s", "%.4f s", "w16", faster, ">= 30x")
    row("launcher peak RSS", "%.0f MB", "%.1f MB", "rss", lambda t, x: "1/%.0f" % (t / x),
        "<= 1/20")
    row("restart latency (failure -> 4 workers running)", "%.0f ms", "%.1f ms", "restart",
        faster, "<= 20 ms")
    print()
    for p in peers:
        print("torchrun %s: %s" % (p, " ".join(TORCHRUNS[p])))
    print("%d repeats for each torchrun, %d for ddprun; load average %s before, %s after"
          % (args.repeats, args.repeats * 4, load_before, loadavg()))


if __name__ == "__main__":
    main()
