"""Reads rdzv_bench JSON lines on stdin; prints markdown tables (median per K, flow and mode:
unauthenticated, and authenticated with job secrets; with the median number of agents the
daemon challenged) and the secret / plain ratios.
Pipelined flows (each simulated agent goes on by itself, as a real agent does): all at once
(on a daemon that learns the job's key by trust on first use, the first open is challenged and
the others wait for its JOIN), agent 0 first (rdzv_bench --first-alone: the others open once
the key is known), and the same with every agent's first write built before the timed run
(--prepared: real agents build theirs on their own hosts, in parallel), and agent 0 in a
process of its own with the others 0.3 ms later (run.sh's "split": rdzv_bench --range). The phased flow
(barriers between connect, handshake and join) shows the challenged way apart; the CPU columns
show what a secret costs the daemon and the K agents. docs/security.md "Cost" reads them."""
import json
import statistics
import sys

rows = {}
for line in sys.stdin:
    r = json.loads(line)
    flow = r.get("flow", "phased")
    if "rendezvous_s" not in r:  # older output: the phases' sum
        r["rendezvous_s"] = r["connect_s"] + r.get("handshake_s", 0.0) + r["join_s"]
    rows.setdefault((flow, r["agents"], r.get("auth", False)), []).append(r)


def med(rs, key):
    return statistics.median(r.get(key, 0.0) for r in rs) * 1000


def challenged(rs):
    return "%g" % statistics.median(r.get("challenged", 0) for r in rs)


def cells(rs, keys):
    return ["%.1f" % med(rs, key) for key in keys]


def table(header, align, lines):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(align) + "|")
    for line in lines:
        print("| " + " | ".join(str(c) for c in line) + " |")
    print()


def mode(auth):
    return "secret" if auth else "plain"


PIPELINED = {"pipelined": "all at once", "prepared": "all at once, first writes prepared",
             "split": "agent 0 in its own process, the others 0.3 ms later",
             "first_alone": "agent 0 first",
             "first_alone_prepared": "agent 0 first, first writes prepared"}
ORDER = {"pipelined": 0, "prepared": 1, "split": 2, "first_alone": 3, "first_alone_prepared": 4}
print("Pipelined (each agent connects and joins by itself, as real agents do; with a secret:")
print("AUTH_OPEN + signed JOIN in one write, the JOIN again under a CHALLENGE when challenged;")
print("all agents at once, or agent 0 first and the others on its Joined; \"prepared\": every")
print("agent's first write built before the timed run, as real agents build theirs in parallel):")
print()
table(["agents K", "start", "mode", "world size", "challenged agents",
       "rendezvous: first connect -> all assigned (ms)", "per agent (us)",
       "last connection up (ms)", "last CHALLENGE in (ms)",
       "teardown: failure -> last StopWorkers (ms)", "stop reports -> all JobFinished (ms)",
       "daemon CPU per run (ms)", "bench (K agents) CPU per run (ms)"],
      ["---:", "---", "---"] + ["---:"] * 10,
      [[k, PIPELINED[flow], mode(auth), rs[0]["world_size"], challenged(rs),
        "%.1f" % med(rs, "rendezvous_s"),
        "%.1f" % (med(rs, "rendezvous_s") * 1000 / k), "%.1f" % med(rs, "connect_s"),
        "%.1f" % med(rs, "challenge_s") if auth and "challenge_s" in rs[0] else "-"]
       + cells(rs, ("stop_s", "finish_s", "daemon_cpu_s", "bench_cpu_s"))
       for (flow, k, auth), rs in sorted(rows.items(),
                                         key=lambda i: (i[0][1], ORDER.get(i[0][0], 9), i[0][2]))
       if flow in PIPELINED])

print("Phased (barriers: all connect, then all AUTH_HELLO -> CHALLENGE, then all JOIN;")
print("the challenged way, every agent challenged):")
print()
table(["agents K", "mode", "challenged agents", "connect: all connections up (ms)",
       "handshake: AUTH_HELLO -> all CHALLENGEs (ms)", "join: JOIN -> all assigned (ms)",
       "rendezvous: first connect -> all assigned (ms)", "daemon CPU per run (ms)",
       "bench (K agents) CPU per run (ms)"],
      ["---:", "---"] + ["---:"] * 7,
      [[k, mode(auth), challenged(rs)]
       + cells(rs, ("connect_s", "handshake_s", "join_s", "rendezvous_s", "daemon_cpu_s",
                    "bench_cpu_s"))
       for (flow, k, auth), rs in sorted(rows.items()) if flow == "phased"])


def ratio(flow, k, key):
    plain, auth = rows.get((flow, k, False)), rows.get((flow, k, True))
    if not plain or not auth or not med(plain, key):
        return "-"
    return "%.2f" % (med(auth, key) / med(plain, key))


print("Secret / plain (ratio of the medians):")
print()
COLUMNS = (("all at once: rendezvous", "pipelined", "rendezvous_s"),
           ("all at once: daemon CPU", "pipelined", "daemon_cpu_s"),
           ("all at once: bench CPU", "pipelined", "bench_cpu_s"),
           ("agent 0 in its own process: rendezvous", "split", "rendezvous_s"),
           ("agent 0 in its own process: daemon CPU", "split", "daemon_cpu_s"),
           ("agent 0 first: rendezvous", "first_alone", "rendezvous_s"),
           ("agent 0 first: daemon CPU", "first_alone", "daemon_cpu_s"),
           ("agent 0 first: bench CPU", "first_alone", "bench_cpu_s"),
           ("agent 0 first, prepared: rendezvous", "first_alone_prepared", "rendezvous_s"),
           ("agent 0 first, prepared: daemon CPU", "first_alone_prepared", "daemon_cpu_s"),
           ("pipelined teardown", "pipelined", "stop_s"),
           ("pipelined finish", "pipelined", "finish_s"),
           ("phased rendezvous", "phased", "rendezvous_s"),
           ("phased join: JOIN -> all assigned", "phased", "join_s"),
           ("phased daemon CPU", "phased", "daemon_cpu_s"),
           ("phased bench CPU", "phased", "bench_cpu_s"))
table(["agents K"] + [c[0] for c in COLUMNS], ["---:"] * (len(COLUMNS) + 1),
      [[k] + [ratio(flow, k, key) for _, flow, key in COLUMNS]
       for k in sorted({k for _, k, _ in rows})])
