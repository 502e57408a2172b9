"""Bad input against a real ddp-rendezvous: random bytes, a declared 1 GB length, a
half-sent request held open, 10,000 connections opened and dropped. After each, the daemon
is up, an observer connection opened at the start still works, and RSS stays bounded.

usage: test_bad_input.py DAEMON_BINARY [unittest args]
"""
import os
import random
import resource
import socket
import struct
import subprocess
import sys
import time
import unittest

from daemon_util import (MODERN_VALIDATE, Daemon, closed_by_peer, connect, recv_exact,
                         recv_vec, s, u64)

DAEMON = None
# Sanitizer builds may raise it through the environment; the product budget is 20 MB.
RSS_LIMIT_KB = int(os.environ.get("DDP_TEST_RSS_LIMIT_KB", 20 * 1024))


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        cls.d = Daemon(DAEMON)
        cls.observer = connect(cls.d.port)
        cls.round = 0

    @classmethod
    def tearDownClass(cls):
        cls.observer.close()
        assert cls.d.stop() == 0, cls.d.stderr_text()[-2000:]

    def assert_healthy(self):
        """Daemon alive, the observer's old connection and a new one both answer."""
        self.assertTrue(self.d.alive(), self.d.stderr_text()[-2000:])
        BadInput.round += 1
        key = f"observer/{self.round}"
        self.observer.sendall(b"\x03" + s(key) + struct.pack("<q", 1))  # 1.13 ADD
        self.assertEqual(struct.unpack("<q", recv_exact(self.observer, 8))[0], 1)
        with connect(self.d.port) as fresh:
            fresh.sendall(MODERN_VALIDATE + b"\x03" + s(key))  # modern GET
            self.assertEqual(recv_vec(fresh), b"1")
        self.assertLess(self.d.rss_kb(), RSS_LIMIT_KB)

    def test_random_bytes(self):
        rng = random.Random(1234)
        for i in range(300):
            with connect(self.d.port) as c:
                prefix = MODERN_VALIDATE if i % 3 == 0 else b""
                c.sendall(prefix + rng.randbytes(rng.randint(1, 2048)))
        self.assert_healthy()
        self.assertIn("closing connection from", self.d.stderr_text())

    def test_declared_one_gigabyte_lengths(self):
        gib = 1 << 30
        attacks = {
            "1.13 key": b"\x00" + u64(gib),
            "1.13 value": b"\x00" + s("k") + u64(gib),
            "modern value": MODERN_VALIDATE + b"\x01" + s("k") + u64(gib),
            "modern key count": MODERN_VALIDATE + b"\x06" + u64(gib),
        }
        for name, payload in attacks.items():
            with connect(self.d.port) as c:
                c.sendall(payload)
                self.assertTrue(closed_by_peer(c), name)
        self.assertIn("1073741824 bytes exceeds the limit", self.d.stderr_text())
        self.assert_healthy()

    def test_half_sent_request_does_not_stall_others(self):
        with connect(self.d.port) as slow:
            request = b"\x00" + s("half/key") + s(b"x" * 1000)
            slow.sendall(request[:500])  # held open mid-value
            deadline = time.monotonic() + 5.0
            with connect(self.d.port) as other:
                for i in range(200):
                    other.sendall(b"\x03" + s("half/counter") + struct.pack("<q", 1))
                    self.assertEqual(struct.unpack("<q", recv_exact(other, 8))[0], i + 1)
            self.assertLess(time.monotonic(), deadline)
            self.assert_healthy()
            slow.sendall(request[500:] + b"\x02" + s("half/key"))  # finish, then GET
            self.assertEqual(recv_vec(slow), b"x" * 1000)

    def test_a_protocol_1_agents_join_is_refused_with_an_error_it_reads(self):
        # ddprun 0.1's JOIN (no HELLO before it, no length after the type byte).
        with connect(self.d.port) as c:
            c.sendall(b"\x80" + s("old-job") + s("old-node") + s("127.0.0.1") + b"\x00" * 64)
            head = recv_exact(c, 10)  # protocol 1's ERROR: type, code, u64 message length
            self.assertEqual(head[:2], bytes([0x94, 4]))  # kProtocol
            message = recv_exact(c, struct.unpack_from("<Q", head, 2)[0]).decode()
            self.assertIn("ddprun 0.1 (native protocol 1)", message)
            self.assertIn("upgrade ddprun on this node", message)
            self.assertTrue(closed_by_peer(c))
        self.assert_healthy()

    def test_ten_thousand_connections_opened_and_dropped(self):
        conns = []
        try:
            for i in range(10000):
                c = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
                conns.append(c)
                if i % 2 == 0:
                    c.sendall(b"\x06")  # 1.13 GETNUMKEYS
                else:
                    c.sendall(MODERN_VALIDATE + b"\x07")  # modern GETNUMKEYS
            for c in conns:
                self.assertEqual(len(recv_exact(c, 8)), 8)
            rss_open = self.d.rss_kb()
            print(f"\nRSS with 10,000 open connections: {rss_open} kB", file=sys.stderr)
            self.assertLess(rss_open, RSS_LIMIT_KB)
        finally:
            for c in conns:
                c.close()
        # Every connection is closed on our side; the daemon notices asynchronously, so check
        # health with a round trip (which queues behind the 10,000 closes).
        self.assert_healthy()
        print(f"RSS after dropping them: {self.d.rss_kb()} kB", file=sys.stderr)


class RemovedFlags(unittest.TestCase):
    def test_open_window_is_refused_in_one_line(self):
        for args in (["--open-window", "10"], ["--open-window=0"], ["--open-window"]):
            out = subprocess.run([DAEMON, "--port", "0", *args], capture_output=True, text=True,
                                 timeout=10)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertEqual(out.stderr.count("\n"), 1, out.stderr)
            self.assertIn("--open-window: removed; agents always answer one challenge per "
                          "connection", out.stderr)


if __name__ == "__main__":
    DAEMON = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
