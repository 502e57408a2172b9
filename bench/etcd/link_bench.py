"""etcd_link_bench under a fresh etcd: K agents' etcd links (the product's EtcdLink, in one
process) join one job through etcd and the elected host's native daemon; prints the median of
the rendezvous time (first link opened -> last agent's RoundComplete) per K, the agents' median
time to their JOIN accepted (their etcd part done), and the CPU time of the bench and of etcd
(the join includes etcd's own work for every agent's lease, reads, watch and campaign).

    /usr/bin/python3 bench/etcd/link_bench.py BUILD_DIR [--agents 100,1000] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "testlib"))
import etcd  # noqa: E402


def cpu_s(pid):
    """A process's user + system CPU time so far (s)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--agents", default="100,1000")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    subprocess.run(["cmake", "--build", a.build, "--target", "etcd_link_bench"], check=True,
                   stdout=subprocess.DEVNULL)  # not part of `all`
    bench = os.path.join(a.build, "bin", "etcd_link_bench")
    cluster = etcd.Cluster(1)  # the test members' flags (docs/etcd.md, "Measured")
    try:
        for k in (int(x) for x in a.agents.split(",")):
            runs = []
            for _ in range(a.repeats):
                etcd_cpu = cpu_s(cluster.procs[0].pid)
                out = subprocess.run([bench, "--endpoints", cluster.endpoints(), "--agents", str(k)],
                                     capture_output=True, text=True, timeout=300)
                if out.returncode != 0:
                    sys.exit("etcd_link_bench failed: %s %s" % (out.stdout, out.stderr))
                runs.append(json.loads(out.stdout))
                runs[-1]["etcd_cpu_s"] = cpu_s(cluster.procs[0].pid) - etcd_cpu
            times = [r["rendezvous_s"] for r in runs]
            print("%d agents: rendezvous %.3f s median (%s); median of the agents' JOIN accepted "
                  "(their etcd part done) %.3f s; CPU: bench %.2f s, etcd %.2f s (medians)" % (
                      k, statistics.median(times), ", ".join("%.3f" % t for t in times),
                      statistics.median(r["joined_s"]["p50"] for r in runs),
                      statistics.median(r["bench_cpu_s"] for r in runs),
                      statistics.median(r["etcd_cpu_s"] for r in runs)))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
