"""Reads rdzv_bench JSON lines on stdin; prints markdown tables (median per K, flow and mode:
unauthenticated, and authenticated with job secrets) and the secret / plain ratios.
The rendezvous figure is the pipelined one, first connect -> every agent assigned, where each
simulated agent goes on by itself as a real agent does. The phased flow (barriers between connect, handshake and join) shows where the time goes;
the CPU columns show what a secret costs the daemon and the K agents."""
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


print("Pipelined (each agent connects, handshakes and joins by itself, as real agents do):")
print()
table(["agents K", "mode", "world size",
       "rendezvous: first connect -> all assigned (ms)", "per agent (us)",
       "last connection up (ms)", "last CHALLENGE in (ms)",
       "teardown: failure -> last StopWorkers (ms)", "stop reports -> all JobFinished (ms)",
       "daemon CPU per run (ms)", "bench (K agents) CPU per run (ms)"],
      ["---:", "---"] + ["---:"] * 9,
      [[k, mode(auth), rs[0]["world_size"], "%.1f" % med(rs, "rendezvous_s"),
        "%.1f" % (med(rs, "rendezvous_s") * 1000 / k), "%.1f" % med(rs, "connect_s"),
        "%.1f" % med(rs, "challenge_s") if auth else "-"]
       + cells(rs, ("stop_s", "finish_s", "daemon_cpu_s", "bench_cpu_s"))
       for (flow, k, auth), rs in sorted(rows.items()) if flow == "pipelined"])

print("Phased (barriers: all connect, then all AUTH_HELLO -> CHALLENGE, then all JOIN):")
print()
table(["agents K", "mode", "connect: all connections up (ms)",
       "handshake: AUTH_HELLO -> all CHALLENGEs (ms)", "join: JOIN -> all assigned (ms)",
       "rendezvous: first connect -> all assigned (ms)", "daemon CPU per run (ms)",
       "bench (K agents) CPU per run (ms)"],
      ["---:", "---"] + ["---:"] * 6,
      [[k, mode(auth)]
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
COLUMNS = (("pipelined rendezvous", "pipelined", "rendezvous_s"),
           ("pipelined daemon CPU", "pipelined", "daemon_cpu_s"),
           ("pipelined bench CPU", "pipelined", "bench_cpu_s"),
           ("pipelined teardown", "pipelined", "stop_s"),
           ("pipelined finish", "pipelined", "finish_s"),
           ("phased rendezvous", "phased", "rendezvous_s"),
           ("phased join: JOIN -> all assigned", "phased", "join_s"),
           ("phased daemon CPU", "phased", "daemon_cpu_s"),
           ("phased bench CPU", "phased", "bench_cpu_s"))
table(["agents K"] + [c[0] for c in COLUMNS], ["---:"] * (len(COLUMNS) + 1),
      [[k] + [ratio(flow, k, key) for _, flow, key in COLUMNS]
       for k in sorted({k for _, k, _ in rows})])
