"""Smoke test of the store benchmark's load generators (bench/store: store_load, wire_load).

Usage: /usr/bin/python3 run_store_load.py --load PATH --wire PATH --server daemon --daemon PATH

Runs store_load's short set/get/add loop and a small barrier spread over three child
processes, then wire_load's barrier of raw connections, against a real server, and checks what
the benchmark reads from the result lines: the counts it asked for, timings that add up, the
server's memory read from /proc. Not a timed test: no figure is compared with a goal here
(bench/store/run.sh does that, side by side).
"""

import argparse
import os
import subprocess
import sys

from store_server import StoreServer, add_server_args

DEADLINE_S = 90
BARRIER_CLIENTS = 60
CLIENTS_PER_PROCESS = 25  # three children: 20 clients each
WIRE_CLIENTS = 300


def fields(line, prefix):
    """The NAME=VALUE fields of a result line that must start with `prefix`."""
    if not line.startswith(prefix + " "):
        sys.exit(f"store_load printed {line!r}, expected a line starting with {prefix!r}")
    return dict(part.split("=", 1) for part in line.split()[1:])


def run_load(argv):
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"store_load did not finish within {DEADLINE_S}s: {argv}")
    if done.returncode != 0:
        sys.exit(f"store_load exited {done.returncode}: {done.stderr.strip()}")
    lines = done.stdout.strip().splitlines()
    if len(lines) != 1:
        sys.exit(f"store_load printed {len(lines)} lines, expected one: {done.stdout!r}")
    return lines[0]


def check(condition, what):
    if not condition:
        sys.exit(f"store_load result wrong: {what}")


def check_barrier_times(result):
    connect, phase, total = (float(result[k]) for k in ("connect_s", "barrier_s", "total_s"))
    check(connect > 0 and phase > 0, f"phases {connect} s and {phase} s")
    check(abs(connect + phase - total) < 0.002, f"{connect} + {phase} != total {total}")
    # CPU seconds of the server and of the load generator in each phase; the clients' cannot
    # exceed what the machine's cores could give them in that phase.
    cores = os.cpu_count() or 1
    for who in ("server", "client"):
        for name, wall in (("connect", connect), ("barrier", phase)):
            key = f"{who}_cpu_{name}_s"
            check(key in result, f"no {key} field")
            cpu = float(result[key])
            check(cpu >= 0, f"{key} {cpu} < 0")
            if who == "client":
                check(cpu <= cores * wall + 0.01, f"{key} {cpu} s in {wall} s on {cores} cores")


def main():
    parser = argparse.ArgumentParser()
    add_server_args(parser)
    parser.add_argument("--load", required=True, help="store_load binary")
    parser.add_argument("--wire", required=True, help="wire_load binary")
    args = parser.parse_args()
    with StoreServer(args.server, args.daemon) as server:
        common = ["--host", f"{server.host},{server.host}", "--port", str(server.port),
                  "--server-pid", str(server.pid)]
        ops = fields(run_load([args.load, "ops", "--clients", "2", "--seconds", "0.3"] + common),
                     "ops")
        barrier = fields(run_load([args.load, "barrier", "--clients", str(BARRIER_CLIENTS),
                                   "--clients-per-process", str(CLIENTS_PER_PROCESS)] + common),
                         "barrier")
        wire = fields(run_load([args.wire, "--clients", str(WIRE_CLIENTS), "--in-flight", "16"]
                               + common), "wire_barrier")
    check(ops["clients"] == "2", f"ops clients {ops['clients']}")
    check(int(ops["ops"]) > 0 and int(ops["ops"]) % 3 == 0, f"ops count {ops['ops']}")
    check(float(ops["seconds"]) >= 0.3, f"ops window {ops['seconds']} s")
    check(float(ops["ops_per_s"]) > 0, "ops per second")
    check(barrier["clients"] == str(BARRIER_CLIENTS), f"barrier clients {barrier['clients']}")
    check(barrier["procs"] == "3", f"barrier processes {barrier['procs']}")
    check(int(barrier["rss_kb"]) > 0, "server RSS read from /proc")
    check(int(barrier["hwm_kb"]) >= int(barrier["rss_kb"]), "server VmHWM below VmRSS")
    check_barrier_times(barrier)
    check(wire["clients"] == str(WIRE_CLIENTS), f"wire clients {wire['clients']}")
    check_barrier_times(wire)
    check(int(wire["rss_kb"]) > 0, "server RSS read from /proc (wire)")
    print(f"store_load against the {args.server} server: OK ({ops['ops_per_s']} ops/s, "
          f"barrier of {BARRIER_CLIENTS} in {barrier['total_s']} s, raw barrier of {WIRE_CLIENTS} "
          f"in {wire['total_s']} s)")


if __name__ == "__main__":
    main()
