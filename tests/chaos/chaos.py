#!/usr/bin/env python3
"""The fault campaign: seeded, randomized, bounded fault trials over the real ddprun and
ddp-rendezvous binaries (docs/chaos.md).

    chaos.py --ddprun build/bin/ddprun --daemon build/bin/ddp-rendezvous --seed 7 --trials 15

Each trial draws a configuration from (seed, trial number) alone: loopback or network
namespaces, embedded or standalone daemon, 2 or 3 nodes, fixed or elastic node count,
--max-restarts 0 or 2, 1 or 2 workers per node, sleep or real PyTorch Gloo workers. Fault kinds
take turns (faults.py); each trial injects one fault and checks the invariants (run.py).
Prints a table per fault kind and one line per violation with the command that reruns that
trial alone (--only N). Exits 1 when any trial violated an invariant.
"""
import argparse
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402  (registers the kinds)
import plan  # noqa: E402
import topology  # noqa: E402
from run import Run  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ddprun", required=True)
    p.add_argument("--daemon", required=True, help="the ddp-rendezvous binary")
    p.add_argument("--seed", type=int, default=None, help="default: from the clock, printed")
    p.add_argument("--trials", type=int, default=15)
    p.add_argument("--only", type=int, default=None, help="run this trial number alone")
    p.add_argument("--kinds", default=",".join(plan.KINDS),
                   help="comma-separated fault kinds (default: all: %(default)s)")
    p.add_argument("--no-netns", action="store_true", help="loopback trials only")
    p.add_argument("--placements", default="embedded,standalone",
                   help="where the rendezvous may be, drawn per trial: embedded (node 0's "
                   "agent), standalone (ddp-rendezvous), etcd (an etcd server; the etcd "
                   "backend); default: %(default)s")
    p.add_argument("--report", help="also write the table to this file")
    p.add_argument("--verbose", action="store_true",
                   help="print each node's exit code and last log line per trial")
    args = p.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    args.placements = [x for x in args.placements.split(",") if x]
    if not args.placements or set(args.placements) - {"embedded", "standalone", "etcd"}:
        p.error("--placements takes embedded, standalone and etcd, comma-separated")
    unknown = [k for k in args.kinds if k not in faults.FAULTS]
    if unknown:
        p.error("unknown fault kind %s; known: %s" % (", ".join(unknown), ", ".join(plan.KINDS)))
    if args.seed is None:
        args.seed = int(time.time()) % 1000000
    return args


def table(args, results, skipped):
    lines = ["chaos campaign: seed %d, %d trials, %s" % (
        args.seed, len(results), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), ""]
    lines.append("%-12s %6s %10s   %s" % ("fault", "trials", "violations",
                                          "fault -> last process gone, s (min / median / max)"))
    for kind in args.kinds:
        rows = [r for r in results if r[0].kind == kind]
        if not rows:
            lines.append("%-12s %6d %10s   %s" % (kind, 0, "-", skipped.get(kind, "not drawn")))
            continue
        bad = sum(1 for r in rows if r[1])
        times = [r[2] for r in rows if r[2] is not None]
        spread = ("%.1f / %.1f / %.1f" % (min(times), statistics.median(times), max(times))
                  if times else "-")
        lines.append("%-12s %6d %10d   %s" % (kind, len(rows), bad, spread))
    kinds = sorted({(r[0].topology, r[0].placement) for r in results})
    lines.append("")
    lines.append("placements: " + ", ".join(
        "%s/%s %d" % (topo, place, sum(1 for r in results if (r[0].topology, r[0].placement)
                                       == (topo, place))) for topo, place in kinds))
    lines.append("torch workers in %d trials, elastic node counts in %d" % (
        sum(r[0].torch for r in results), sum(r[0].elastic for r in results)))
    violations = [(t, v) for t, vs, _ in results for v in vs]
    lines.append("violations: %d" % len(violations))
    for t, v in violations:
        lines.append("  trial %d (%s): %s" % (t.index, t.describe(), v))
        lines.append("    rerun: %s %s --ddprun %s --daemon %s --seed %d --placements %s "
                     "--only %d" % (sys.executable, os.path.abspath(__file__), args.ddprun,
                                    args.daemon, args.seed, ",".join(args.placements), t.index))
    return "\n".join(lines)


def main():
    args = parse_args()
    # SIGTERM (a CTest timeout, kill) unwinds like Ctrl-C: the namespaces and agents go too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    indices = [args.only] if args.only is not None else range(args.trials)
    netns = None if args.no_netns else topology.namespaces_or_none(4)  # 3 nodes and a spare
    loopback = topology.Loopback()
    results, skipped = [], {}
    print("chaos: seed %d, %d trial(s), kinds %s" % (args.seed, len(indices),
                                                     ",".join(args.kinds)), flush=True)
    try:
        for k in indices:
            kind = args.kinds[k % len(args.kinds)]
            inject, applies, shape = faults.FAULTS[kind]
            try:
                t = plan.draw(args.seed, k, kind, netns is not None, applies, shape,
                              args.placements)
            except RuntimeError as e:
                skipped[kind] = "skipped: %s (%s)" % (
                    e, "no network namespaces here" if netns is None
                    else "not with --placements " + ",".join(args.placements))
                print("chaos: trial %d skipped: %s" % (k, e), flush=True)
                continue
            run = Run(t, args.ddprun, args.daemon, netns if t.topology == "netns" else loopback)
            started = time.monotonic()
            try:
                violations, gone = run.execute(inject)
            finally:
                run.cleanup()
            if args.verbose:
                for n, a in enumerate(run.agents):
                    print("    node %d: exit %s: %s" % (n, a.returncode, run.tail(n, 1)))
            if violations:
                violations.append("logs kept in " + run.tmp)
            else:
                run.remove_files()
            results.append((t, violations, gone))
            print("chaos: trial %d %s: %s (%.1f s)%s" % (
                k, t.describe(), "VIOLATED" if violations else "ok", time.monotonic() - started,
                "".join("\n    " + v for v in violations)), flush=True)
    finally:
        if netns is not None:
            netns.remove()
    report = table(args, results, skipped)
    print("\n" + report)
    if args.report:
        with open(args.report, "w") as f:
            f.write(report + "\n")
    return 1 if any(v for _, v, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
