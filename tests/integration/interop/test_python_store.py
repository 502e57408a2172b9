"""Debian's python3-torch (1.13) TCPStore client against a store server.

Usage: /usr/bin/python3 test_python_store.py --server daemon --daemon PATH
       /usr/bin/python3 test_python_store.py --server torch      (the reference server)
"""

import argparse
import datetime
import os
import sys
import threading
import time
import unittest

import torch.distributed as dist

from raw_store import KEY_CREATED, KEY_DELETED, KEY_UPDATED, RawStore
from store_server import StoreServer, add_server_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
import procs  # noqa: E402

ARGS = None
SERVER = None
CLIENT_TIMEOUT = datetime.timedelta(seconds=30)
# Syscalls a thread sits in while blocked on a socket read (x86-64): read, poll, recvfrom,
# recvmsg, ppoll.
BLOCKED_READ_SYSCALLS = {"0", "7", "45", "47", "271"}


def setUpModule():
    global SERVER
    SERVER = StoreServer(ARGS.server, ARGS.daemon).__enter__()


def tearDownModule():
    SERVER.__exit__(None, None, None)


def client(timeout=CLIENT_TIMEOUT):
    # The constructor truncates its connect timeout to whole seconds: connect with the default,
    # then apply the per-operation timeout.
    store = dist.TCPStore(SERVER.host, SERVER.port, is_master=False, timeout=CLIENT_TIMEOUT)
    store.set_timeout(timeout)
    return store


def raw_check(keys):
    """CHECK on user keys. Python 1.13 binds no check(): send it on the wire (keys get the
    client's "/" prefix)."""
    raw = RawStore(SERVER.host, SERVER.port)
    try:
        return raw.check([("/" + k).encode() for k in keys])
    finally:
        raw.close()


def wait_for(pred, deadline_s, what):
    """Kernel state of a thread has no notification to block on: re-checked every 2 ms."""
    procs.wait_for(pred, deadline_s, what, period_s=0.002)


def blocked_reading(tid):
    with open(f"/proc/{os.getpid()}/task/{tid}/syscall") as f:
        return f.read().split(" ", 1)[0] in BLOCKED_READ_SYSCALLS


class Waiter(threading.Thread):
    """Runs store.wait(keys, timeout) on its own client; records the outcome and duration."""

    def __init__(self, keys, timeout):
        super().__init__(daemon=True)
        self.store = client()
        self.keys, self.timeout = keys, timeout
        self.error, self.elapsed, self.tid = None, None, None
        self.started_wait = threading.Event()

    def run(self):
        self.tid = threading.get_native_id()
        self.started_wait.set()
        start = time.monotonic()
        try:
            self.store.wait(self.keys, self.timeout)
        except RuntimeError as e:
            self.error = e
        self.elapsed = time.monotonic() - start


class PythonStoreTest(unittest.TestCase):
    def setUp(self):
        self.store = client()
        self.p = self.id().rsplit(".", 1)[-1] + "/"  # key namespace per test

    def test_set_get(self):
        s, p = self.store, self.p
        s.set(p + "a", "hello")
        self.assertEqual(s.get(p + "a"), b"hello")
        s.set(p + "a", "world")
        self.assertEqual(s.get(p + "a"), b"world")
        s.set(p + "empty", b"")
        self.assertEqual(s.get(p + "empty"), b"")
        binary = bytes(range(256)) * 3
        s.set(p + "bin", binary)
        self.assertEqual(s.get(p + "bin"), binary)
        big = os.urandom(1 << 20)
        s.set(p + "big", big)
        self.assertEqual(client().get(p + "big"), big)

    def test_get_missing_times_out(self):
        short = client(datetime.timedelta(milliseconds=300))
        start = time.monotonic()
        with self.assertRaises(RuntimeError):
            short.get(self.p + "never")
        self.assertLess(time.monotonic() - start, 10)

    def test_add(self):
        s, p = self.store, self.p
        self.assertEqual(s.add(p + "n", 5), 5)
        self.assertEqual(s.add(p + "n", -8), -3)
        self.assertEqual(s.add(p + "n", 0), -3)
        self.assertEqual(s.get(p + "n"), b"-3")
        s.set(p + "text", "10")
        self.assertEqual(s.add(p + "text", 5), 15)
        self.assertEqual(s.add(p + "text", -20), -5)
        self.assertEqual(s.get(p + "text"), b"-5")
        self.assertEqual(s.add(p + "big", 2**62), 2**62)
        self.assertEqual(s.add(p + "big", -(2**62) - 7), -7)

    def test_add_concurrent_clients(self):
        key, per_client, clients = self.p + "n", 200, 4
        errors = []

        def adder():
            try:
                c = client()
                for _ in range(per_client):
                    c.add(key, 1)
            except RuntimeError as e:
                errors.append(e)

        threads = [threading.Thread(target=adder) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
            self.assertFalse(t.is_alive(), "adder did not finish within 60 s")
        self.assertEqual(errors, [])
        self.assertEqual(self.store.add(key, 0), per_client * clients)

    def test_compare_set(self):
        s, p = self.store, self.p
        # Missing key, empty expected: stores desired and returns it.
        self.assertEqual(s.compare_set(p + "k", "", "v1"), b"v1")
        self.assertEqual(s.get(p + "k"), b"v1")
        # Present key, expected matches: swaps and returns the new value.
        self.assertEqual(s.compare_set(p + "k", "v1", "v2"), b"v2")
        self.assertEqual(s.get(p + "k"), b"v2")
        # Present key, expected differs: unchanged, returns the current value.
        self.assertEqual(s.compare_set(p + "k", "wrong", "v3"), b"v2")
        self.assertEqual(s.get(p + "k"), b"v2")
        # Missing key, non-empty expected: stores nothing and returns expected.
        self.assertEqual(s.compare_set(p + "absent", "exp", "des"), b"exp")
        self.assertFalse(raw_check([p + "absent"]))
        # Present key holding an empty value, empty expected: swaps.
        s.set(p + "e", "")
        self.assertEqual(s.compare_set(p + "e", "", "filled"), b"filled")

    def test_check(self):
        s, p = self.store, self.p
        self.assertFalse(raw_check([p + "a"]))
        s.set(p + "a", "1")
        self.assertTrue(raw_check([p + "a"]))
        self.assertFalse(raw_check([p + "a", p + "b"]))
        s.add(p + "b", 1)
        self.assertTrue(raw_check([p + "a", p + "b"]))
        self.assertTrue(raw_check([]))

    def test_wait_ready_keys_returns(self):
        s, p = self.store, self.p
        s.set(p + "a", "1")
        s.set(p + "b", "2")
        s.wait([p + "a", p + "b"])
        s.wait([p + "a"], datetime.timedelta(seconds=5))

    def test_wait_timeout_raises(self):
        # A timed-out 1.13 client keeps a stale registration on its connection: use it once.
        timed_out = client()
        start = time.monotonic()
        with self.assertRaisesRegex(RuntimeError, "(?i)timeout"):
            timed_out.wait([self.p + "never"], datetime.timedelta(milliseconds=300))
        elapsed = time.monotonic() - start
        self.assertGreaterEqual(elapsed, 0.25)
        self.assertLess(elapsed, 10)
        # Setting the key later must not disturb anyone else.
        self.store.set(self.p + "never", "now")
        self.assertEqual(client().get(self.p + "never"), b"now")

    def test_wait_satisfied_later_by_other_client(self):
        p = self.p
        waiter = Waiter([p + "x", p + "y"], datetime.timedelta(seconds=30))
        waiter.start()
        self.assertTrue(waiter.started_wait.wait(timeout=30))
        wait_for(lambda: blocked_reading(waiter.tid), 30, "the waiter to block in its WAIT")
        self.store.set(p + "x", "1")
        self.assertTrue(waiter.is_alive(), "wait returned with one of two keys missing")
        setter = client()
        setter.add(p + "y", 1)
        waiter.join(timeout=30)
        self.assertFalse(waiter.is_alive(), "wait not released within 30 s of the last key")
        self.assertIsNone(waiter.error)
        self.assertEqual(waiter.store.get(p + "y"), b"1")

    def test_many_waiters_released_by_one_set(self):
        key = self.p + "go"
        waiters = [Waiter([key], datetime.timedelta(seconds=30)) for _ in range(8)]
        for w in waiters:
            w.start()
        for w in waiters:
            self.assertTrue(w.started_wait.wait(timeout=30))
            wait_for(lambda w=w: blocked_reading(w.tid), 30, "a waiter to block")
        self.store.set(key, "1")
        for w in waiters:
            w.join(timeout=30)
            self.assertFalse(w.is_alive())
            self.assertIsNone(w.error)

    def test_delete_key(self):
        s, p = self.store, self.p
        s.set(p + "d", "1")
        self.assertTrue(s.delete_key(p + "d"))
        self.assertFalse(raw_check([p + "d"]))
        self.assertFalse(s.delete_key(p + "d"))
        s.set(p + "d", "2")
        self.assertEqual(s.get(p + "d"), b"2")

    def test_num_keys(self):
        s, p = self.store, self.p
        before = s.num_keys()
        self.assertGreaterEqual(before, 0)
        for i in range(3):
            s.set(f"{p}{i}", "v")
        s.set(p + "0", "again")  # overwriting adds no key
        self.assertEqual(s.num_keys(), before + 3)
        s.delete_key(p + "1")
        self.assertEqual(s.num_keys(), before + 2)
        s.add(p + "ctr", 1)
        self.assertEqual(s.num_keys(), before + 3)

    def test_watch_key(self):
        # Python 1.13 binds no watch_key (Store and TCPStore lack it; the C++ client has
        # watchKey, covered by the C++ interop test). Watch through the wire protocol instead,
        # on the "/"-prefixed key the Python client writes.
        self.assertFalse(hasattr(self.store, "watch_key"))
        s, p = self.store, self.p
        raw_key = ("/" + p + "w").encode()
        watcher = RawStore(SERVER.host, SERVER.port)
        try:
            watcher.watch(raw_key)
            s.set(p + "w", "a")
            self.assertEqual(watcher.next_push(), (KEY_CREATED, raw_key, b"", b"a"))
            s.set(p + "w", "b")
            self.assertEqual(watcher.next_push(), (KEY_UPDATED, raw_key, b"a", b"b"))
            s.set(p + "w", "5")
            watcher.next_push()
            self.assertEqual(s.add(p + "w", 2), 7)
            self.assertEqual(watcher.next_push(), (KEY_UPDATED, raw_key, b"5", b"7"))
            self.assertEqual(s.compare_set(p + "w", "7", "cas"), b"cas")
            self.assertEqual(watcher.next_push(), (KEY_UPDATED, raw_key, b"7", b"cas"))
            s.set(p + "other", "x")  # a different key: no push for it
            self.assertTrue(s.delete_key(p + "w"))
            self.assertEqual(watcher.next_push(), (KEY_DELETED, raw_key, b"cas", b""))
        finally:
            watcher.close()

    def test_raw_key_layout(self):
        # The client prefixes user keys with "/": a raw reader sees "/<key>".
        self.store.set(self.p + "layout", "v")
        raw = RawStore(SERVER.host, SERVER.port)
        try:
            self.assertEqual(raw.get(("/" + self.p + "layout").encode()), b"v")
        finally:
            raw.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_server_args(parser)
    ARGS, rest = parser.parse_known_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + rest)
