"""The fault kinds: one function each. A fault function gets the running trial (run.py's Run:
its agents, workers, daemon and topology), injects its fault, and returns the outcome the job
must then have (plan.Expect). Register a new kind with @fault(name, applies=...)."""
import signal

import plan

FAULTS = {}


def fault(name, applies=lambda t: True, shape=lambda t: None):
    def register(fn):
        FAULTS[name] = (fn, applies, shape)
        plan.KINDS.append(name)
        return fn
    return register


@fault("worker_kill")
def worker_kill(run, t):
    run.signal_worker(t.target, t.local_rank, signal.SIGKILL)
    return plan.worker_failed(t, 128 + signal.SIGKILL)


@fault("worker_exit")
def worker_exit(run, t):
    run.worker_exit(t.target, t.local_rank, t.exit_code)
    return plan.worker_failed(t, t.exit_code)


@fault("agent_kill")
def agent_kill(run, t):
    run.signal_agent(t.target, signal.SIGKILL)
    return plan.node_gone(t, {-signal.SIGKILL})


@fault("agent_term")
def agent_term(run, t):
    run.signal_agent(t.target, signal.SIGTERM)
    return plan.node_gone(t, {128 + signal.SIGTERM})


@fault("agent_int")
def agent_int(run, t):
    run.signal_agent(t.target, signal.SIGINT)
    return plan.node_gone(t, {128 + signal.SIGINT})


@fault("daemon_kill", applies=lambda t: t.placement == "standalone")
def daemon_kill(run, t):
    run.kill_daemon()
    return plan.Expect({n: {1} for n in range(t.nodes)})


@fault("agent_stop")
def agent_stop(run, t):
    """Frozen (SIGSTOP) for longer than the heartbeat budget, then resumed: the daemon removes
    the node, and the node must learn it and stop, not wait forever."""
    run.signal_agent(t.target, signal.SIGSTOP)
    run.after(t.pause_s, lambda: run.signal_agent(t.target, signal.SIGCONT))
    if t.hosts_daemon(t.target):
        # Its own node was silent to its daemon too: removed or re-formed alone, racing.
        return plan.host_cut_off(t, {0, 1})
    return plan.node_gone(t, {1})


@fault("link_down", applies=lambda t: t.topology == "netns")
def link_down(run, t):
    """A partition: the node's link goes down for longer than the heartbeat budget."""
    run.link(t.target, False)
    run.after(t.pause_s, lambda: run.link(t.target, True))
    if t.hosts_daemon(t.target):
        return plan.host_cut_off(t, {0})
    return plan.node_gone(t, {1})


def with_spare(t):
    t.spare = True


@fault("spare_takeover", shape=with_spare)
def spare_takeover(run, t):
    """A participant SIGKILLed while a spare waits: the spare takes its ranks (run.py checks
    that every other node kept its own)."""
    run.signal_agent(t.target, signal.SIGKILL)
    run.expect_ranks_kept = not t.hosts_daemon(t.target)
    return plan.spare_takeover(t, {-signal.SIGKILL})


def no_progress_job(t):
    t.no_progress = 1
    t.restarts = 2


@fault("no_progress", shape=no_progress_job)
def no_progress(run, t):
    """The campaign's workers beat no steps, so no round makes progress: with
    --max-no-progress-restarts 1 the first failure restarts the job, the faulted worker fails
    again at once in the next attempt, and that failure ends the job with exit 93 on every
    node (docs/progress.md)."""
    run.fail_again(t.target, t.local_rank)
    run.worker_exit(t.target, t.local_rank, t.exit_code)
    return plan.Expect({n: {93} for n in range(t.nodes)})


def straggler_job(t):
    t.spare = True
    t.straggler = True
    t.torch = False  # Gloo's all_reduce paces every rank alike: no rank would stand out


@fault("straggler", applies=lambda t: not t.hosts_daemon(t.target), shape=straggler_job)
def straggler(run, t):
    """The target node's workers turn 3x slower per step while a spare waits: with
    --exclude-straggler the rendezvous flags one of its ranks, removes the node (it exits 1,
    naming why) and the spare takes its ranks; then the workers stop and the job ends 0
    (docs/stragglers.md). run.py checks the event logs and the ranks. (The node hosting the
    daemon is not the target: its removal would end the job, as in spare_takeover.)"""
    run.slow_down(t.target)
    run.stop_once_replaced()
    run.expect_ranks_kept = True
    return plan.spare_takeover(t, {1})
