"""Reads rdzv_bench JSON lines on stdin; prints the markdown table (median per K and mode:
unauthenticated, and authenticated with job secrets) and the authenticated / plain ratios.
The goal of issue 21 is judged on the rendezvous column (JOIN -> all assigned: the same
exchange in both modes); handshake (AUTH_HELLO -> CHALLENGE, secret only), total (connect +
handshake + join, median of the per-run sums) and the CPU columns show the full price."""
import json
import statistics
import sys

rows = {}
for line in sys.stdin:
    r = json.loads(line)
    r["total_s"] = r["connect_s"] + r.get("handshake_s", 0.0) + r["join_s"]
    rows.setdefault((r["agents"], r.get("auth", False)), []).append(r)


def med(rs, key):
    return statistics.median(r.get(key, 0.0) for r in rs) * 1000


print("| agents K | mode | world size | connect (ms) | handshake (ms) "
      "| rendezvous: JOIN -> all assigned (ms) | per agent (us) "
      "| total: connect + handshake + join (ms) | teardown: failure -> last StopWorkers (ms) "
      "| stop reports -> all JobFinished (ms) | daemon CPU per run (ms) "
      "| bench (K agents) CPU per run (ms) |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (k, auth), rs in sorted(rows.items()):
    cells = [k, "secret" if auth else "plain", rs[0]["world_size"], "%.1f" % med(rs, "connect_s"),
             "%.1f" % med(rs, "handshake_s"), "%.1f" % med(rs, "join_s"),
             "%.1f" % (med(rs, "join_s") * 1000 / k), "%.1f" % med(rs, "total_s"),
             "%.1f" % med(rs, "stop_s"), "%.1f" % med(rs, "finish_s"),
             "%.1f" % med(rs, "daemon_cpu_s"), "%.1f" % med(rs, "bench_cpu_s")]
    print("| " + " | ".join(str(c) for c in cells) + " |")
print()
KEYS = ("join_s", "total_s", "stop_s", "finish_s", "daemon_cpu_s", "bench_cpu_s")
print("| agents K | secret / plain: rendezvous (the goal: <= 1.10) | total | teardown | finish "
      "| daemon CPU | bench CPU |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for k in sorted({k for k, _ in rows}):
    plain, auth = rows.get((k, False)), rows.get((k, True))
    if not plain or not auth:
        continue
    ratio = ["%.2f" % (med(auth, key) / med(plain, key)) if med(plain, key) else "-"
             for key in KEYS]
    print("| %d | %s |" % (k, " | ".join(ratio)))
