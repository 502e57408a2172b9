"""The operations a PyTorch 2.14 TCPStore client has beyond 2.6's, against a server: BARRIER,
list_keys, multi_set. Run under the PyTorch being tested (scripts/torch214-py for 2.14):

    PYTHON store_ops_client.py HOST PORT

The queue calls (2.8) are not here: a client without libuv (the only kind Debian's torch makes)
refuses them itself, before a byte is sent.

Exits 0 when every check holds, else 1 with the failed checks on stderr. A barrier's
waiting is observed through the store itself: the barrier key counts arrivals.
"""
import datetime
import sys
import threading
import time

import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=30)
DEADLINE_S = 30.0
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def client(host, port):
    return dist.TCPStore(host, port, is_master=False, timeout=TIMEOUT, use_libuv=False)


def arrivals(store, key, n):
    """Waits (with a deadline) until `n` ranks have arrived at barrier `key`."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if store.check([key]) and int(store.get(key)) >= n:
            return True
        time.sleep(0.01)  # the store has no event for "a key's value reached n"
    return False


def barrier_releases_all_at_the_last_arrival(host, port):
    stores = [client(host, port) for _ in range(3)]
    passed = []
    errors = []

    def rank(r):
        try:
            stores[r].barrier("b", 3, TIMEOUT)
            passed.append(r)
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            errors.append("rank %d: %r" % (r, e))

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    check(arrivals(stores[2], "b", 2), "two barrier arrivals seen in the store")
    check(passed == [], "no rank passes the barrier before the last arrives: %s" % passed)
    rank(2)
    for t in threads:
        t.join(DEADLINE_S)
    check(sorted(passed) == [0, 1, 2], "every rank passed the barrier: %s %s" % (passed, errors))
    check(stores[0].get("b") == b"3", "the barrier key counts 3 arrivals: %r"
          % stores[0].get("b"))


def barrier_times_out_and_the_connection_goes_on(host, port):
    store = client(host, port)
    started = time.monotonic()
    try:
        store.barrier("t", 2, datetime.timedelta(milliseconds=300))
        check(False, "a barrier of 2 with one rank timed out")
    except dist.DistStoreError as e:
        check("timeout" in str(e), "the barrier's error says timeout: %s" % e)
    check(time.monotonic() - started < DEADLINE_S, "the barrier timed out in time")
    store.set("after", "x")
    check(store.get("after") == b"x", "the connection serves after a barrier timed out")


def newer_operations(host, port):
    store = client(host, port)
    store.multi_set(["m1", "m2"], [b"a", b"b"])
    check(store.multi_get(["m1", "m2"]) == [b"a", b"b"], "multi_set then multi_get")
    keys = set(store.list_keys())
    check({"m1", "m2"} <= keys, "list_keys holds the keys set: %s" % sorted(keys))


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    print("PyTorch", __import__("torch").__version__, flush=True)
    barrier_releases_all_at_the_last_arrival(host, port)
    barrier_times_out_and_the_connection_goes_on(host, port)
    newer_operations(host, port)
    for f in failures:
        print("FAILED:", f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
