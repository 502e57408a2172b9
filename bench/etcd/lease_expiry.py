"""How late etcd itself deletes the keys of an expired lease (the floor under ddprun's recovery
from a lost node): grant a lease of TTL 1 and 2 s, attach a key, keep it alive once, then read
the key every 5 ms until it is gone. etcd checks lease expiry on its own period (500 ms in
3.4), so keys go between TTL and TTL + 0.5 s after the last keep-alive.

    /usr/bin/python3 bench/etcd/lease_expiry.py [--trials 5]
"""
import argparse
import base64
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "integration", "testlib"))
import etcd  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    cluster = etcd.Cluster(1)  # the same member flags as bench.py's (heartbeat 50 ms)
    url = "http://127.0.0.1:%d" % cluster.client_ports[0]
    key = base64.b64encode(b"/lease-expiry").decode()
    try:
        for ttl in (1, 2):
            gone = []
            for i in range(args.trials):
                lease = etcd._post(url + "/v3/lease/grant", {"TTL": ttl})["ID"]
                etcd._post(url + "/v3/kv/put", {"key": key, "value": "", "lease": lease})
                time.sleep(0.137 * i)  # the point: a different phase of etcd's check each trial
                etcd._post(url + "/v3/lease/keepalive", {"ID": lease})
                t0 = time.time()
                while etcd._post(url + "/v3/kv/range", {"key": key}).get("kvs"):
                    time.sleep(0.005)  # the sampling period of the measure
                gone.append(time.time() - t0)
            print("lease_ttl=%d s: keys deleted %.2f-%.2f s after the last keep-alive (%d trials)"
                  % (ttl, min(gone), max(gone), len(gone)))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
