"""Trial plans: what each trial runs (drawn from its seed alone, so any trial can be rerun by
itself) and what its outcome must be. Pure: no processes here."""
import dataclasses
import random

KINDS = []  # fault kind names in campaign order; faults.py registers them


@dataclasses.dataclass
class Trial:
    index: int
    seed: int
    kind: str
    topology: str     # "loopback" | "netns"
    placement: str    # "embedded" (node 0's agent hosts the daemon) | "standalone" | "etcd"
    nodes: int        # agents started
    min_nodes: int    # == nodes for a fixed node count
    restarts: int     # --max-restarts
    nproc: int        # workers per node
    torch: bool       # real PyTorch Gloo workers
    target: int       # the faulted node
    local_rank: int   # the faulted worker on it (worker faults)
    delay_s: float    # fault this long after every worker of the first attempt started
    exit_code: int    # worker_exit's code
    pause_s: float    # agent_stop / link_down: how long the node is frozen or cut off
    spare: bool = False          # one more agent joins at MAX as a spare before the fault
    no_progress: int = 0         # --max-no-progress-restarts (0: off)
    straggler: bool = False      # paced workers, --exclude-straggler; the target turns slow

    @property
    def elastic(self):
        return self.min_nodes < self.nodes

    @property
    def nnodes(self):
        return "%d:%d" % (self.min_nodes, self.nodes) if self.elastic else str(self.nodes)

    @property
    def run_id(self):
        return "chaos-%d-%d" % (self.seed, self.index)

    def hosts_daemon(self, node):
        """Whether the daemon goes with this node. On etcd the hosting node is elected, and
        when it goes the others elect another (docs/etcd.md): no node is the daemon's."""
        return self.placement == "embedded" and node == 0

    @property
    def agents(self):
        return self.nodes + (1 if self.spare else 0)

    def describe(self):
        return "%s, %s, %s daemon, %d nodes (--nnodes %s)%s, %d worker(s) each%s, --max-restarts %d" % (
            self.kind, self.topology, self.placement, self.nodes, self.nnodes,
            " + a spare" if self.spare else "", self.nproc, " (torch)" if self.torch else "",
            self.restarts)


def draw(seed, index, kind, netns_ok, applies, shape=lambda t: None,
         placements=("embedded", "standalone")):
    """Trial `index` of the campaign `seed` for fault `kind`: the same every time. `applies`
    (a Trial -> bool) says whether the kind can run in a drawn configuration; up to 50 draws.
    `shape` sets what the kind itself needs (a spare, the no-progress option, paced workers).
    `placements`: where the rendezvous may be (the same draws for the same list)."""
    rng = random.Random("%d/%d" % (seed, index))
    for _ in range(50):
        nodes = rng.choice([2, 3])
        elastic = rng.random() < 0.5
        t = Trial(
            index=index, seed=seed, kind=kind,
            topology="netns" if netns_ok and rng.random() < 0.4 else "loopback",
            placement=rng.choice(list(placements)),
            nodes=nodes, min_nodes=nodes - 1 if elastic else nodes,
            restarts=rng.choice([0, 2]), nproc=rng.choice([1, 2]),
            torch=rng.random() < 0.25,
            target=rng.randrange(nodes), local_rank=0,
            delay_s=round(rng.uniform(0.0, 1.2), 2), exit_code=rng.randint(1, 120),
            pause_s=round(rng.uniform(2.5, 8.0), 1))
        t.local_rank = rng.randrange(t.nproc)
        shape(t)
        if applies(t):
            return t
    raise RuntimeError("no configuration fits fault kind %s" % kind)


@dataclasses.dataclass
class Expect:
    """The outcome a trial must have. codes[node]: the exit codes that node's agent may end
    with (Popen's, so -9 for SIGKILL). root: the faulted worker is the root cause, so every
    node exiting non-zero names its host and global rank in its root-cause table."""
    codes: dict
    root: bool = False


def worker_failed(t, code):
    """A worker on t.target ended with `code` (128 + signal when killed)."""
    if t.restarts > 0:  # restarted once; the next attempt runs to the end
        return Expect({n: {0} for n in range(t.nodes)})
    return Expect({n: {code} for n in range(t.nodes)}, root=True)


def node_gone(t, own_codes):
    """Node t.target left the job (crash, signal, removal); its agent ends with own_codes."""
    codes = {t.target: own_codes}
    for n in range(t.nodes):
        if n == t.target:
            continue
        if t.hosts_daemon(t.target):
            codes[n] = {1}  # the daemon went with it: every other node loses the rendezvous
        else:
            codes[n] = {0} if t.elastic else {1}  # elastic jobs re-form without it
    return Expect(codes)


def spare_takeover(t, own_codes):
    """Node t.target left a job that had a spare: the spare takes its place, so the job goes on
    at its size (unless the target hosted the daemon: every other node loses the rendezvous)."""
    codes = {t.target: own_codes}
    for n in range(t.agents):
        if n != t.target:
            codes[n] = {1} if t.hosts_daemon(t.target) else {0}
    return Expect(codes)


def host_cut_off(t, host_alone_codes):
    """The daemon-hosting node was frozen or cut off: every other node loses the rendezvous;
    the host then holds a job of one node, which goes on only when MIN allows it."""
    codes = {n: {1} for n in range(t.nodes) if n != t.target}
    codes[t.target] = host_alone_codes if t.min_nodes <= 1 else {1}
    return Expect(codes)
