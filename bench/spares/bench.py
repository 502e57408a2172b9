"""Spares benchmark (issue 32, docs/spares.md "Benchmark"): a node is lost -> every node's
workers running again, with a spare and without one, side by side in one run.

  spare:     --nnodes N (MIN = MAX = N), N agents running, one more agent waiting as the spare.
             At T0 a non-host agent (group rank 1) is SIGKILLed; the spare takes its group rank.
  no spare:  --nnodes N-1:N, N agents running. The same SIGKILL; the job re-forms with the N-1
             survivors; once their workers run, a replacement agent is started (the "new
             joiner": what a user without spares does) and the job restarts to admit it.
             (A fixed-size job, MIN = MAX, without a spare just fails on a lost node: nothing
             to time.)

Real nodes (--nodes, default 2,8): real ddprun agents on loopback (each its own 127.0.0.x,
c10d, the first agent hosts the rendezvous in-process), --nproc-per-node 2 shell workers
(`sleep & wait`, stopped by SIGTERM at once), every agent with --event-log. Phases, from T0
(this script's clock just before the SIGKILL) and the agents' event logs (one machine, one
wall clock; the log's times have millisecond resolution), each ending when the last node
concerned reached it:
  detect   T0 -> every survivor's `stop_requested`
  stop     -> every survivor's `workers_done` (its workers exited; it tells the rendezvous)
  re-round -> every node of the next round has its `round` event
  spawn    -> every node of that round has its `workers_started` event
Without a spare these four run to the N-1 round; then the joiner's stretch, from its start
(this script's clock just before it starts the agent):
  start    -> the joiner's `join` event (its process started and begins to join)
  admit    -> every survivor's `stop_requested` (the rendezvous restarts the job for it)
  stop, re-round, spawn as above, to the N-node round.
The total without a spare is the two stretches (loss -> N-1 running, joiner start -> N
running); the time this script takes to notice the N-1 round and start the joiner is left
out, and a real replacement takes what the scheduler needs to give a node (minutes): the
figure is the least a joiner can cost.

Simulated nodes (--sim-nodes, default 2,8,1000): bench/rendezvous/rdzv_bench --loss spare|joiner
against a real ddp-rendezvous, K raw native-protocol connections in one process: detect and
re-round only (the simulated agents run no workers: no stop, no spawn).

usage: bench.py BUILD_DIR [--repeats 11] [--nodes 2,8] [--sim-nodes 2,8,1000] [--sim-repeats 11]
Not a test: a measurement. Prints markdown tables of medians (ms) and the ratios.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "testlib"))
from procs import free_port, poll_until  # noqa: E402

NPROC = 2
WORKER = "sleep 100000 & wait"
# The first round waits for all N agents (MIN = N-1 would otherwise form without a slow one);
# later rounds form at once (their nodes are known), whatever the last call.
CONF = "last_call_timeout=30,join_timeout=60"
DEADLINE_S = 60
REAL_PHASES = ["detect", "stop", "reround", "spawn"]
JOIN_PHASES = ["start", "admit", "stop2", "reround2", "spawn2"]
NAMES = {"detect": "detect (T0 -> every survivor told to stop)",
         "stop": "stop (-> survivors' workers stopped)",
         "reround": "re-round (-> every node in the next round)",
         "spawn": "spawn (-> every node's workers started)",
         "start": "joiner: agent start (-> its `join` event)",
         "admit": "joiner: admit (-> every survivor told to stop)",
         "stop2": "joiner: stop (-> survivors' workers stopped)",
         "reround2": "joiner: re-round (-> all N in the round)",
         "spawn2": "joiner: spawn (-> all N nodes' workers started)"}


class Agent:
    def __init__(self, name, argv, workdir):
        self.name = name
        self.log = os.path.join(workdir, name + ".jsonl")
        self.err_path = os.path.join(workdir, name + ".err")
        argv = argv[:1] + ["--event-log", self.log] + argv[1:]
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                         stdin=subprocess.DEVNULL)

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def events(self):
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []

    def first(self, event, round_no=None):
        """This agent's first `event` (of round `round_no` when given), or None."""
        for e in self.events():
            if e["event"] == event and round_no in (None, e["round"]):
                return e
        return None


def agent_argv(ddprun, port, run_id, nnodes, addr):
    return [ddprun, "--nnodes", nnodes, "--nproc-per-node", str(NPROC), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", "127.0.0.1:%d" % port, "--rdzv-id", run_id,
            "--rdzv-conf", CONF, "--local-addr", addr, "--shutdown-timeout", "5",
            "--no-python", "bash", "-c", WORKER]


def wait(pred, what, agents):
    # Polls files other processes write (event logs, stderr): no event announces them here.
    if not poll_until(pred, DEADLINE_S, 0.005):
        tails = "\n".join("%s: %s" % (a.name, a.stderr()[-400:]) for a in agents)
        raise RuntimeError("timed out waiting for %s\n%s" % (what, tails))


def latest(agents, event, round_no):
    """The latest time over `agents` of each one's first `event` of round `round_no`; None
    while one has none yet."""
    found = [a.first(event, round_no) for a in agents]
    return None if None in found else max(e["ts_unix"] for e in found)


def now_ms():
    """This clock on the event log's grid (whole milliseconds, floored as the log's times)."""
    return int(time.time() * 1000) / 1000


def real_run(ddprun, n, spare, rep, tmp):
    """One loss of a real N-node job; returns {phase: seconds}."""
    run_id = "spares-%d-%s-%d-%d" % (n, "spare" if spare else "joiner", rep, os.getpid())
    workdir = tempfile.mkdtemp(prefix=run_id + ".", dir=tmp)
    port = free_port()
    nnodes = str(n) if spare else "%d:%d" % (n - 1, n)
    agents = []

    def start(i):
        agent = Agent("n%d" % i, agent_argv(ddprun, port, run_id, nnodes, "127.0.0.%d" % (2 + i)),
                      workdir)
        agents.append(agent)
        return agent

    try:
        host = start(0)
        wait(lambda: "hosting the rendezvous" in host.stderr(), "the host agent", agents)
        for i in range(1, n):
            start(i)
        first = list(agents)
        wait(lambda: latest(first, "workers_started", None) is not None, "the job running",
             agents)
        rounds = {a.name: a.first("round") for a in first}
        r1 = rounds["n0"]["round"]
        # Group rank 1 (the middle of the job: without a spare, the last rank moves into it);
        # never the host, whose loss ends the job.
        lost = min(first[1:], key=lambda a: rounds[a.name]["group_rank"] != 1)
        survivors = [a for a in first if a is not lost]
        spare_agent = None
        if spare:
            spare_agent = start(n)
            wait(lambda: "(waiting: a round is running)" in spare_agent.stderr(),
                 "the spare to wait", agents)
        t0 = now_ms()
        lost.proc.send_signal(signal.SIGKILL)
        lost.proc.wait()
        nxt = survivors + ([spare_agent] if spare else [])
        wait(lambda: latest(nxt, "workers_started", r1 + 1) is not None,
             "the next round's workers", agents)
        out = split(survivors, nxt, t0, r1)
        check_round(nxt, r1 + 1, rounds if spare else None, lost, spare_agent)
        if spare:
            return out
        tj = now_ms()  # the N-1 round's workers all started: the joiner comes now
        joiner = start(n)
        final = survivors + [joiner]
        wait(lambda: latest(final, "workers_started", r1 + 2) is not None,
             "the round admitting the joiner", agents)
        joined = joiner.first("join")["ts_unix"]
        out["start"] = joined - tj
        second = split(survivors, final, joined, r1 + 1)
        for phase, key in zip(REAL_PHASES, ["admit", "stop2", "reround2", "spawn2"]):
            out[key] = second[phase]
        check_round(final, r1 + 2, None, None, None)
        return out
    finally:
        for a in agents:
            if a.proc.poll() is None:
                a.proc.send_signal(signal.SIGTERM)
        for a in agents:
            try:
                a.proc.wait(15)
            except subprocess.TimeoutExpired:
                a.proc.kill()
                a.proc.wait()


def split(told, nxt, t0, stopped):
    """detect / stop / re-round / spawn from t0: `told` are the nodes that stop their round
    `stopped`, `nxt` the nodes of the round after it."""
    marks = [latest(told, "stop_requested", stopped), latest(told, "workers_done", stopped),
             latest(nxt, "round", stopped + 1), latest(nxt, "workers_started", stopped + 1)]
    if None in marks:
        raise RuntimeError("an event is missing from the event logs: %r" % marks)
    out, prev = {}, t0
    for phase, mark in zip(REAL_PHASES, marks):
        out[phase] = mark - prev
        prev = mark
    return out


def check_round(nodes, round_no, before, lost, spare_agent):
    """The round `round_no` of `nodes`: group ranks 0..len-1, no restart used; with `before`
    (a spare), survivors keep their group rank and the spare gets the lost node's."""
    got = {a.name: a.first("round", round_no) for a in nodes}
    if None in got.values():
        raise RuntimeError("a node has no round %d" % round_no)
    if sorted(e["group_rank"] for e in got.values()) != list(range(len(nodes))):
        raise RuntimeError("round %d: group ranks %r" % (round_no, got))
    if any(e["restart_count"] != 0 for e in got.values()):
        raise RuntimeError("round %d used a restart" % round_no)
    if before is None:
        return
    for a in nodes:
        want = before[lost.name if a is spare_agent else a.name]["group_rank"]
        if got[a.name]["group_rank"] != want:
            raise RuntimeError("%s: group rank %d, expected %d"
                               % (a.name, got[a.name]["group_rank"], want))


def sim_runs(build, k, repeats):
    """rdzv_bench --loss against one ddp-rendezvous: {mode: [result json, ...]}."""
    daemon = subprocess.Popen([os.path.join(build, "bin", "ddp-rendezvous"), "--port", "0",
                               "--log-level", "error"], stdout=subprocess.PIPE, text=True)
    try:
        ready = daemon.stdout.readline()  # "listening on HOST:PORT" once ready
        if "listening on" not in ready:
            raise RuntimeError("ddp-rendezvous did not start: %r" % ready)
        port = ready.strip().rsplit(":", 1)[1]
        out = {"spare": [], "joiner": []}
        for rep in range(repeats):
            for mode in ("spare", "joiner"):
                r = subprocess.run([os.path.join(build, "bin", "rdzv_bench"), "--port", port,
                                    "--agents", str(k), "--run-id", "sim-%s-%d-%d" % (mode, k, rep),
                                    "--loss", mode], capture_output=True, text=True, timeout=120)
                if r.returncode != 0:
                    raise RuntimeError("rdzv_bench --loss %s: %s" % (mode, r.stderr))
                out[mode].append(json.loads(r.stdout))
        return out
    finally:
        daemon.terminate()
        daemon.wait()


def med(runs, key):
    return statistics.median(r[key] for r in runs) * 1000


def ms(x):
    return "%.2f" % x if x < 1 else "%.1f" % x if x < 100 else "%.0f" % x


def paired(spare_runs, joiner_runs, key):
    """The median of the per-repeat ratios no spare / spare (the two ran back to back)."""
    return statistics.median(j[key] / s[key] for s, j in zip(spare_runs, joiner_runs))


def whole(x):
    return "%.0f" % x


def spread(runs, key, fmt=ms):
    """min-max of `key` over `runs`, in ms."""
    return "%s-%s" % (fmt(min(r[key] for r in runs) * 1000), fmt(max(r[key] for r in runs) * 1000))


def print_real(n, spare_runs, joiner_runs):
    print("\n### %d nodes (real agents, %d workers each): median ms of %d"
          % (n, NPROC, len(spare_runs)))
    print("| phase | spare | no spare (MIN = %d, then a new joiner) |" % (n - 1))
    print("|---|---:|---:|")
    for phase in REAL_PHASES:
        print("| %s | %s | %s |" % (NAMES[phase], whole(med(spare_runs, phase)),
                                    whole(med(joiner_runs, phase))))
    print("| = workers running again | **%s** (all %d nodes) | %s (%d node%s) |"
          % (whole(med(spare_runs, "total")), n, whole(med(joiner_runs, "first")), n - 1,
             "s" if n > 2 else ""))
    for phase in JOIN_PHASES:
        print("| %s | | %s |" % (NAMES[phase], whole(med(joiner_runs, phase))))
    s, j = med(spare_runs, "total"), med(joiner_runs, "total")
    print("| **loss -> all %d nodes' workers running** | **%s** (%s) | **%s** (%s) |"
          % (n, whole(s), spread(spare_runs, "total", whole), whole(j),
             spread(joiner_runs, "total", whole)))
    print("| ratio no spare / spare: of the medians; paired (median of each repeat's) | | "
          "**%.1fx**; %.1fx |" % (j / s, paired(spare_runs, joiner_runs, "total")))
    print("totals: median (min-max); each row is its own median (the phases' medians need not "
          "add up to the total's); times from the event logs, in whole ms")


def print_sim(sims, repeats):
    print("\n### Simulated nodes (rdzv_bench --loss: the rendezvous only, no workers, stop "
          "answered at once, no spawn): median ms of %d" % repeats)
    print("| K nodes | spare: detect | spare: re-round | **spare: total** | no spare: detect "
          "| re-round (K-1) | joiner: connect + join | joiner: re-round (K) "
          "| **no spare: total** | ratio (paired) | survivors moved (spare / no spare) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, runs in sims:
        sp, jo = runs["spare"], runs["joiner"]
        s, j = med(sp, "total_s"), med(jo, "total_s")
        print("| %d | %s | %s | **%s** (%s) | %s | %s | %s | %s | **%s** (%s) | %.1fx (%.1fx) "
              "| %d / %d |"
              % (k, ms(med(sp, "detect_s")), ms(med(sp, "reround_s")), ms(s),
                 spread(sp, "total_s"), ms(med(jo, "detect_s")), ms(med(jo, "reround_s")),
                 ms(med(jo, "join_s")), ms(med(jo, "reround2_s")), ms(j), spread(jo, "total_s"),
                 j / s, paired(sp, jo, "total_s"),
                 max(r["ranks_moved"] for r in sp), max(r["ranks_moved"] for r in jo)))
    print("detect: T0 (a participant's connection closed) -> every survivor has StopWorkers; "
          "re-round: -> every node of the next round has RoundComplete; joiner: connect + join: "
          "its connect -> every survivor has StopWorkers (node joined); totals: median (min-max); "
          "ratio: of the medians (paired: the median of each repeat's)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--nodes", default="2,8")
    parser.add_argument("--sim-nodes", default="2,8,1000")
    parser.add_argument("--sim-repeats", type=int, default=11)
    args = parser.parse_args()
    ddprun = os.path.join(args.build, "bin", "ddprun")
    # SIGTERM ends the run through the finally blocks: agents and daemon stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = [os.getloadavg()[0]]
    print("## Spares: node loss -> workers running again (%s UTC, %d cores)"
          % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.cpu_count()))
    with tempfile.TemporaryDirectory(prefix="spares-bench.") as tmp:
        for n in [int(x) for x in args.nodes.split(",") if x]:
            runs = {True: [], False: []}
            for rep in range(args.repeats):
                for spare in (True, False):  # alternate: the same load for both
                    r = real_run(ddprun, n, spare, rep, tmp)
                    r["first"] = sum(r[p] for p in REAL_PHASES)
                    r["total"] = r["first"] + sum(r.get(p, 0) for p in JOIN_PHASES)
                    runs[spare].append(r)
            load.append(os.getloadavg()[0])
            print_real(n, runs[True], runs[False])
    sims = [(k, sim_runs(args.build, k, args.sim_repeats))
            for k in [int(x) for x in args.sim_nodes.split(",") if x]]
    if sims:
        print_sim(sims, args.sim_repeats)
        load.append(os.getloadavg()[0])
    print("\nload average (1 min) during the run: %s; agents, workers, daemon and the "
          "simulated agents share this machine" % " -> ".join("%.1f" % x for x in load))


if __name__ == "__main__":
    main()
