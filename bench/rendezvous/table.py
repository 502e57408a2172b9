"""Reads rdzv_bench JSON lines on stdin; prints the markdown table (median per K)."""
import json
import statistics
import sys

rows = {}
for line in sys.stdin:
    r = json.loads(line)
    rows.setdefault(r["agents"], []).append(r)
print("| agents K | world size | connect (ms) | rendezvous: JOIN -> all assigned (ms) "
      "| per agent (us) | teardown: failure -> last StopWorkers (ms) "
      "| stop reports -> all JobFinished (ms) |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for k, rs in sorted(rows.items()):
    def med(key):
        return statistics.median(r[key] for r in rs) * 1000
    cells = [k, rs[0]["world_size"], "%.1f" % med("connect_s"), "%.1f" % med("join_s"),
             "%.1f" % (med("join_s") * 1000 / k), "%.1f" % med("stop_s"),
             "%.1f" % med("finish_s")]
    print("| " + " | ".join(str(c) for c in cells) + " |")
