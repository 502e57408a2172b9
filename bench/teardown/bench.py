"""Cross-node teardown benchmark (issue #4): a worker fails on one node; how long until the
last worker of the other node is stopped. Real agents, one per network namespace (two
namespaces joined by a veth pair, each agent also in its own UTS namespace whose hostname is
its node's IP, so both launchers find themselves in the endpoint without extra flags), c10d
rendezvous on node a, 2 nodes x 2 workers, --max-restarts 0.

usage: bench.py DDPRUN [--repeats N] [--torchrun-repeats M] [--cap SECONDS] [--no-torchrun]
                [--peers 2.6,1.13]
--peers: the torchruns run after ddprun (default both): 2.6 is Debian 13's python3-torch in the
root scripts/debian_root.sh makes, through scripts/torch2-python and
bench/launch/torchrun2_compat.py (that build has no libuv); 1.13 the host's, through
bench/launch/torchrun_compat.py.

Each worker stamps $EPOCHREALTIME when it starts. Once all 4 have started, the worker with
GROUP_RANK=1, LOCAL_RANK=0 stamps and exits 3; every other worker traps SIGTERM, stamps and
exits. Latency = the later stop stamp of GROUP_RANK 0's two workers - the failure stamp (one
clock: same machine). A launcher whose other node does not stop its workers within --cap
seconds is reported as "> cap" (the run is then killed). Prints min / median / max in ms.
Needs root (ip netns, unshare --uts).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
LAUNCH = os.path.join(HERE, "..", "launch")
TORCHRUNS = {
    "1.13": [PYTHON, os.path.join(LAUNCH, "torchrun_compat.py")],
    "2.6": [os.path.normpath(os.path.join(HERE, "..", "..", "scripts", "torch2-python")),
            os.path.join(LAUNCH, "torchrun2_compat.py")],
}
ADDRS = ["10.233.0.1", "10.233.0.2"]

WORKER = r'''
m="$MARK_DIR"
stamp() { echo "$EPOCHREALTIME" > "$m/.$1" && mv "$m/.$1" "$m/$1"; }  # whole or absent
stamp "started.$GROUP_RANK.$LOCAL_RANK"
if [ "$GROUP_RANK" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then
  while [ "$(ls "$m" | grep -c '^started\.')" -lt 4 ]; do
    sleep 0.01  # polling period of the condition, not a wait for an event
  done
  stamp failed
  exit 3
fi
trap 'stamp "stopped.$GROUP_RANK.$LOCAL_RANK"; exit 143' TERM
sleep 100000 &
wait
'''


def run(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, timeout=30)


class Namespaces:
    def __init__(self):
        tag = str(os.getpid() % 100000)
        self.ns = ["ddptda" + tag, "ddptdb" + tag]
        veth = ["vtda" + tag, "vtdb" + tag]
        self.created = []
        try:
            for ns in self.ns:
                run("ip", "netns", "add", ns)
                self.created.append(ns)
            run("ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
            for ns, v, addr in zip(self.ns, veth, ADDRS):
                run("ip", "link", "set", v, "netns", ns)
                run("ip", "-n", ns, "addr", "add", addr + "/24", "dev", v)
                run("ip", "-n", ns, "link", "set", v, "up")
                run("ip", "-n", ns, "link", "set", "lo", "up")
        except (OSError, subprocess.CalledProcessError) as e:
            self.close()
            sys.exit("bench.py: cannot create network namespaces (%s); run as root" % e)

    def prefix(self, node):
        return ["ip", "netns", "exec", self.ns[node], "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', ADDRS[node]]

    def kill_all(self):
        for ns in self.created:
            pids = run("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass

    def close(self):
        self.kill_all()
        for ns in self.created:
            run("ip", "netns", "del", ns, check=False)
        self.created = []


def agent_argv(launcher, node, port, run_id):
    endpoint = "%s:%d" % (ADDRS[0], port)
    if launcher == "ddprun":
        return [DDPRUN, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, "--max-restarts", "0",
                "--no-python", "bash", "-c", WORKER]
    return [*TORCHRUNS[launcher], "--nnodes", "2", "--nproc_per_node", "2", "--rdzv_backend", "c10d",
            "--rdzv_endpoint", endpoint, "--rdzv_id", run_id, "--max_restarts", "0",
            "--monitor_interval", "0.1", "--no_python", "bash", "-c", WORKER]


def label(launcher):
    return launcher if launcher == "ddprun" else "torchrun " + launcher


def wait_for(predicate, deadline_s):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)  # polling period of the condition, not a wait for an event
    return False


def once(ns, launcher, rep, cap):
    """One run; returns the latency in seconds, or None when it exceeded the cap."""
    with tempfile.TemporaryDirectory(prefix="ddp_teardown_") as tmp:
        marks = os.path.join(tmp, "marks")
        os.mkdir(marks)
        env = dict(os.environ, MARK_DIR=marks)
        port = 29400 + rep % 100
        procs = []
        try:
            for node in (0, 1):
                log = open(os.path.join(tmp, "node%d.log" % node), "wb")
                procs.append(subprocess.Popen(
                    ns.prefix(node) + agent_argv(launcher, node, port, "td%d" % rep),
                    stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL))
                if node == 0 and launcher == "ddprun":
                    # ddprun's non-hosting c10d agent connects once: start it after the host.
                    wait_for(lambda: b"hosting the rendezvous" in
                             open(os.path.join(tmp, "node0.log"), "rb").read(), 20)
            if not wait_for(lambda: os.path.exists(os.path.join(marks, "failed")), 120):
                logs = [open(os.path.join(tmp, "node%d.log" % n)).read()[-2000:] for n in (0, 1)]
                sys.exit("%s: the workers never started\n%s" % (label(launcher), "\n".join(logs)))
            stopped = lambda: len(glob.glob(os.path.join(marks, "stopped.0.*"))) == 2
            if not wait_for(stopped, cap):
                print("%s run %d: node a's workers not stopped after %.0f s; node a's agent %s"
                      % (label(launcher), rep, cap, "still running" if procs[0].poll() is None
                         else "exited %d" % procs[0].returncode), file=sys.stderr)
                return None
            with open(os.path.join(marks, "failed")) as f:
                failed = float(f.read())
            stops = []
            for path in glob.glob(os.path.join(marks, "stopped.0.*")):
                with open(path) as f:
                    stops.append(float(f.read()))
            return max(stops) - failed
        finally:
            ns.kill_all()
            for p in procs:
                p.wait()


def summary(name, lat, runs, cap):
    done = [x for x in lat if x is not None]
    missed = runs - len(done)
    if not done:
        return "| %s | > %.0f s (no teardown within the cap in %d of %d runs) | | |" % (
            name, cap, missed, runs)
    row = "| %s | %.0f ms | %.0f ms | %.0f ms |" % (
        name, min(done) * 1e3, statistics.median(done) * 1e3, max(done) * 1e3)
    if missed:
        row += " (%d of %d runs: > %.0f s)" % (missed, runs, cap)
    return row


def main():
    global DDPRUN
    ap = argparse.ArgumentParser()
    ap.add_argument("ddprun")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--torchrun-repeats", type=int, default=2)
    ap.add_argument("--cap", type=float, default=60.0)
    ap.add_argument("--no-torchrun", action="store_true")
    ap.add_argument("--peers", default="2.6,1.13", help="torchrun versions: 2.6, 1.13 or both")
    args = ap.parse_args()
    DDPRUN = os.path.abspath(args.ddprun)
    peers = [] if args.no_torchrun else [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in TORCHRUNS:
            sys.exit("--peers: %s is not one of %s" % (p, ", ".join(TORCHRUNS)))
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    ns = Namespaces()
    try:
        rows = []
        lat = [once(ns, "ddprun", i, args.cap) for i in range(args.repeats)]
        rows.append(summary("ddprun", lat, args.repeats, args.cap))
        for p in peers:
            lat = [once(ns, p, i, args.cap) for i in range(args.torchrun_repeats)]
            rows.append(summary("torchrun %s (--monitor_interval 0.1)" % p, lat,
                                args.torchrun_repeats, args.cap))
    finally:
        ns.close()
    print("cross-node teardown: worker failure on node b -> last worker stopped on node a")
    print("(2 network namespaces, c10d, 2 nodes x 2 workers, --max-restarts 0)\n")
    print("| launcher | min | median | max |")
    print("|---|---|---|---|")
    for row in rows:
        print(row)
    with open("/proc/loadavg") as f:
        print("\nload average %s before, %s after" % (load_before, " ".join(f.read().split()[:3])))


if __name__ == "__main__":
    main()
