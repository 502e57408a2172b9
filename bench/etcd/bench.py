"""etcd rendezvous: ddprun's etcd backend (v3 API, watches, leases) against torchrun 1.13's own
etcd-v2 backend, side by side in one run on the same etcd 3.4 (started with --enable-v2; the
cut case has its own, with the same flags, in a network namespace).

  rendezvous: N agents (1 worker each) started at once -> the last worker started
  recovery:   a 2-node 1:2 job training with Gloo; one node (agent and workers: its process
              group) SIGKILLed -> the survivor's worker started again in a world of 1 (ddprun:
              the dead agent's death watch, in a group of its own, revokes its lease); the same
              with the node SIGSTOPped instead (frozen: nothing revokes, the lease decides)
  cut:        the same job with etcd and each node in its own network namespace on a bridge
              (cutoff_net.py); one node cut off the network (its kernel sends nothing any
              more, as a machine that lost power or its network: no close, no ack, no reset)
              -> the survivor's worker in a world of 1. Twice: the node cut is not the lead,
              then it is (ddprun: the agent hosting the rendezvous, started and joined first;
              torchrun: group rank 0's node, whose worker serves the workers' store). The two
              launchers alternate each repeat; skipped (a note) without network namespaces.

    /usr/bin/python3 bench/etcd/bench.py BUILD_DIR [--repeats 3] [--cases rdzv,recovery,cut]
"""
import argparse
import glob
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "testlib"))
import cutoff_net  # noqa: E402
import etcd  # noqa: E402
from procs import poll_until  # noqa: E402

PYTHON = "/usr/bin/python3"
TORCHRUN = [PYTHON, os.path.join(HERE, "..", "launch", "torchrun_compat.py"),
            "--monitor_interval", "0.1"]
WORKER = os.path.join(HERE, "gloo_loop.py")
LAST_CALL = "1"  # seconds, the same for both (a round waits this long past MIN)


def agent_cmd(launcher, ddprun, endpoint, run_id, nnodes, addr, ttl):
    if launcher == "ddprun":
        return [ddprun, "--nnodes", nnodes, "--nproc-per-node", "1", "--rdzv-backend", "etcd",
                "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, "--local-addr", addr,
                "--max-restarts", "3", "--rdzv-conf",
                "last_call_timeout=%s,lease_ttl=%d" % (LAST_CALL, ttl), WORKER]
    return TORCHRUN + ["--nnodes", nnodes, "--nproc_per_node", "1", "--rdzv_backend", "etcd",
                       "--rdzv_endpoint", endpoint, "--rdzv_id", run_id, "--max_restarts", "3",
                       "--rdzv_conf", "last_call_timeout=%s" % LAST_CALL, WORKER]


def starts(marks, world=None):
    out = []
    for p in glob.glob(os.path.join(marks, "start.*[0-9]")):
        if world is None or os.path.basename(p).split(".")[1] == str(world):
            with open(p) as f:
                out.append(float(f.read()))
    return sorted(out)


def spawn(cmd, marks, log, extra_env=None):
    env = dict(os.environ, MARK_DIR=marks, PYTHONUNBUFFERED="1", DDPRUN_PYTHON=PYTHON)
    env.update(extra_env or {})
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)


def rendezvous(launcher, args, cluster, n, rep, tmp):
    marks = tempfile.mkdtemp(dir=tmp)
    run_id = "rdzv-%s-%d-%d" % (launcher, n, rep)
    t0 = time.time()
    procs = [spawn(agent_cmd(launcher, args.ddprun, cluster.endpoints(), run_id, str(n),
                             "127.0.0.%d" % (i + 2), 5), marks,
                   os.path.join(marks, "agent%d.log" % i), {"BENCH_ONCE": "1"})
             for i in range(n)]
    for p in procs:
        p.wait(timeout=120)
    s = starts(marks)
    if len(s) != n:
        raise RuntimeError("%s: %d of %d workers started; see %s" % (launcher, len(s), n, marks))
    return s[-1] - t0


def recovery(launcher, args, cluster, rep, tmp, sig=signal.SIGKILL):
    marks = tempfile.mkdtemp(dir=tmp)
    run_id = "recovery-%s-%s-%d" % (launcher, signal.Signals(sig).name, rep)
    procs = [spawn(agent_cmd(launcher, args.ddprun, cluster.endpoints(), run_id, "1:2",
                             "127.0.0.%d" % (i + 2), args.lease_ttl), marks,
                   os.path.join(marks, "agent%d.log" % i)) for i in range(2)]
    if not poll_until(lambda: len(starts(marks, 2)) == 2, 60):
        raise RuntimeError("%s: the 2-node round did not start; see %s" % (launcher, marks))
    time.sleep(1.0)  # the point: let the job train a little before the loss
    open(os.path.join(marks, "killed"), "w").close()
    t0 = time.time()
    os.killpg(procs[1].pid, sig)  # the node: its agent and its workers
    ok = poll_until(lambda: starts(marks, 1), 90)
    took = starts(marks, 1)[0] - t0 if ok else float("inf")
    os.killpg(procs[1].pid, signal.SIGKILL)  # a frozen node is not woken: it ends here
    procs[1].wait()
    try:
        procs[0].wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
    return took


def cut_off(launcher, args, net, rep, tmp, role):
    """The recovery with one node cut off the network (net.cut) once both workers train.
    role "plain": the node cut is not the lead; "lead": it is. The lead is ddprun's
    hosting agent's node, and for torchrun (no host) group rank 0's node, whose
    worker 0 serves the workers' store. Each node marks into its own directory."""
    root = tempfile.mkdtemp(dir=tmp)
    marks = [os.path.join(root, "node%d" % i) for i in range(2)]
    logs = [os.path.join(root, "agent%d.log" % i) for i in range(2)]
    run_id = "cut-%s-%s-%d" % (launcher, role, rep)
    procs, cut = [], None
    try:
        for i in range(2):
            os.mkdir(marks[i])
            procs.append(spawn(net.prefix(i) + agent_cmd(
                launcher, args.ddprun, net.endpoint, run_id, "1:2", net.addr(i), args.lease_ttl),
                marks[i], logs[i], {"GLOO_SOCKET_IFNAME": net.ifname}))
            # ddprun's node 0 joins alone first: it hosts and is group rank 0 (the JOIN
            # order). torchrun's start together (its second agent would miss the last call).
            if launcher == "ddprun" and i == 0 and not poll_until(
                    lambda: "joined job" in open(logs[0]).read(), 30):
                raise RuntimeError("ddprun: node 0 did not join; see %s" % root)
        if not poll_until(lambda: sum(len(starts(m, 2)) for m in marks) == 2, 60):
            raise RuntimeError("%s: the 2-node round did not start; see %s" % (launcher, root))
        time.sleep(1.0)  # the point: let the job train a little before the loss
        rank0 = [i for i in range(2) if glob.glob(os.path.join(marks[i], "start.2.0.*"))][0]
        lead = rank0
        if launcher == "ddprun":
            lead = [i for i in range(2) if "hosting the rendezvous" in open(logs[i]).read()][0]
        cut = 1 - lead if role == "plain" else lead
        for m in marks:
            open(os.path.join(m, "killed"), "w").close()
        net.cut(cut)
        t0 = time.time()
        survivor = marks[1 - cut]
        ok = poll_until(lambda: starts(survivor, 1), 90)
        took = starts(survivor, 1)[0] - t0 if ok else float("inf")
        print("cut-off %s %s #%d: node %d cut (group rank %d), survivor's worker again after "
              "%.2f s" % (launcher, role, rep, cut, 0 if cut == rank0 else 1, took),
              file=sys.stderr, flush=True)
        return took
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # the node ended by itself (all its processes gone)
            p.wait()
        if cut is not None:
            net.restore(cut)


def cut_off_cases(args, tmp, results):
    """Both launchers alternating, each repeat; skipped (a note) where namespaces cannot be
    made."""
    try:
        net = cutoff_net.Network()
    except cutoff_net.Unavailable as e:
        return "node cut off: skipped (%s)" % e
    try:
        for role in ("plain", "lead"):
            took = {"ddprun": [], "torchrun": []}
            for r in range(args.repeats):
                for launcher in ("ddprun", "torchrun"):
                    took[launcher].append(cut_off(launcher, args, net, r, tmp, role))
            for launcher, values in took.items():
                results[(launcher, "cut", role)] = statistics.median(values)
        return ("node cut off: %s; etcd and each node in its own network namespace on one "
                "bridge; the lead: ddprun's hosting node, torchrun's group rank 0 node"
                % net.method)
    finally:
        net.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lease-ttl", type=int, default=2)
    parser.add_argument("--cases", default="rdzv,recovery,cut",
                        help="which of rdzv, recovery, cut to run (default: all)")
    args = parser.parse_args()
    cases = args.cases.split(",")
    if not set(cases) <= {"rdzv", "recovery", "cut"}:
        parser.error("--cases: a comma-separated subset of rdzv,recovery,cut; got %r"
                     % args.cases)
    args.ddprun = os.path.join(args.build, "bin", "ddprun")
    # SIGTERM ends the run through the finally blocks: agents, etcd and namespaces removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results, cut_note = {}, None
    with tempfile.TemporaryDirectory() as tmp:
        if "rdzv" in cases or "recovery" in cases:
            cluster = etcd.Cluster(1, extra_args=["--enable-v2"])
            try:
                for launcher in ("ddprun", "torchrun"):
                    for n in (2, 4) if "rdzv" in cases else ():
                        results[(launcher, "rdzv", n)] = statistics.median(
                            rendezvous(launcher, args, cluster, n, r, tmp)
                            for r in range(args.repeats))
                    for sig in (signal.SIGKILL, signal.SIGSTOP) if "recovery" in cases else ():
                        results[(launcher, "recovery", sig)] = statistics.median(
                            recovery(launcher, args, cluster, r, tmp, sig)
                            for r in range(args.repeats))
            finally:
                cluster.stop()
        if "cut" in cases:
            cut_note = cut_off_cases(args, tmp, results)
    print("| measure | torchrun 1.13 etcd-v2 | ddprun etcd (v3) | ratio |")
    print("|---|---:|---:|---:|")
    for key, name in (((("rdzv", 2)), "rendezvous, 2 agents: start -> last worker started (s)"),
                      ((("rdzv", 4)), "rendezvous, 4 agents (s)"),
                      (("recovery", signal.SIGKILL),
                       "node SIGKILLed -> survivor's worker running again (s)"),
                      (("recovery", signal.SIGSTOP),
                       "node SIGSTOPped (frozen) -> survivor's worker running again (s)"),
                      (("cut", "plain"), "node cut off the network (not the lead) -> survivor's "
                       "worker running again (s)"),
                      (("cut", "lead"), "node cut off the network (the lead) -> survivor's "
                       "worker running again (s)")):
        if ("ddprun",) + key not in results:
            continue  # not run, or skipped (see the note below the table)
        t, d = results[("torchrun",) + key], results[("ddprun",) + key]
        print("| %s | %.2f | %.2f | %.1fx |" % (name, t, d, t / d))
    print("\nmedian of %d; last_call_timeout=%s s for both; ddprun lease_ttl=%d s; one etcd 3.4 "
          "member (--enable-v2)%s; agents and workers are real processes; the workers' Gloo "
          "timeout is 5 s (inf: not recovered within 90 s)"
          % (args.repeats, LAST_CALL, args.lease_ttl,
             " on loopback" if cases != ["cut"] else ""))
    if cut_note:
        print(cut_note)


if __name__ == "__main__":
    main()
