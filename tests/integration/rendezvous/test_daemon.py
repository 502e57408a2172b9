"""ddp-rendezvous as a process: start-up, signals, port conflicts, and both wire
numberings byte for byte over raw sockets.

usage: test_daemon.py DAEMON_BINARY [unittest args]
"""
import signal
import socket
import struct
import subprocess
import os
import sys
import unittest

from daemon_util import (MODERN_VALIDATE, Daemon, closed_by_peer, connect, read_line,
                         recv_exact, recv_vec, s, u64)

DAEMON = None


def no_bytes_within(sock, seconds):
    """True when nothing arrives for `seconds`. The wait is the point: it checks that a
    parked WAIT is not answered early."""
    sock.settimeout(seconds)
    try:
        return not sock.recv(1) and False
    except socket.timeout:
        return True
    finally:
        sock.settimeout(5.0)


class Lifecycle(unittest.TestCase):
    def test_sigterm_and_sigint_exit_zero(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            d = Daemon(DAEMON)
            self.assertRegex(d.ready_line, r"^listening on \S+:\d+$")
            with connect(d.port) as c:  # an open connection must not block shutdown
                c.sendall(b"\x06")
                self.assertEqual(len(recv_exact(c, 8)), 8)
                self.assertEqual(d.stop(sig), 0)

    def test_host_option_and_ready_line(self):
        d = Daemon(DAEMON, "--host", "127.0.0.1")
        try:
            self.assertEqual(d.ready_line, f"listening on 127.0.0.1:{d.port}")
        finally:
            self.assertEqual(d.stop(), 0)

    def test_port_taken_exits_non_zero_with_clear_message(self):
        d = Daemon(DAEMON)
        try:
            second = subprocess.run([DAEMON, "--port", str(d.port)], capture_output=True,
                                    text=True, timeout=10)
            self.assertNotEqual(second.returncode, 0)
            self.assertEqual(second.stdout, "")
            self.assertIn("already in use", second.stderr)
            self.assertIn(str(d.port), second.stderr)
            self.assertEqual(len(second.stderr.strip().splitlines()), 1, second.stderr)
        finally:
            self.assertEqual(d.stop(), 0)

    def test_client_that_never_reads_is_closed(self):
        d = Daemon(DAEMON)
        try:
            with connect(d.port) as watcher, connect(d.port) as writer:
                watcher.sendall(b"\x07" + s("big"))  # 1.13 WATCH_KEY, replies never read
                value = b"v" * (8 << 20)
                for i in range(8):  # each push carries old + new: > 64 MiB queued in all
                    writer.sendall(b"\x00" + s("big") + s(value[:-1] + bytes([i])))
                writer.sendall(b"\x06")
                recv_exact(writer, 8)  # the writer is served throughout
                self.assertTrue(closed_by_peer(watcher, timeout=10))
            self.assertIn("does not read its replies", d.stderr_text())
        finally:
            self.assertEqual(d.stop(), 0)

    def test_bad_log_level_is_rejected(self):
        r = subprocess.run([DAEMON, "--port", "0", "--log-level", "loud"], capture_output=True,
                           text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown log level", r.stderr)


class Wire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(DAEMON)

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0

    def test_legacy_113_queries(self):
        with connect(self.d.port) as c:
            c.sendall(b"\x00" + s("/a") + s(b"v\x00v"))             # SET
            c.sendall(b"\x05" + u64(1) + s("/a"))                   # WAIT
            self.assertEqual(recv_exact(c, 1), b"\x00")
            c.sendall(b"\x02" + s("/a"))                            # GET
            self.assertEqual(recv_vec(c), b"v\x00v")
            c.sendall(b"\x03" + s("/n") + struct.pack("<q", 5))     # ADD
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], 5)
            c.sendall(b"\x01" + s("/cas") + s("") + s("x"))         # COMPARE_SET
            self.assertEqual(recv_vec(c), b"x")
            c.sendall(b"\x01" + s("/cas") + s("wrong") + s("y"))
            self.assertEqual(recv_vec(c), b"x")
            c.sendall(b"\x04" + u64(2) + s("/a") + s("/nope"))      # CHECK
            self.assertEqual(recv_exact(c, 1), b"\x01")
            c.sendall(b"\x06")                                      # GETNUMKEYS
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], 3)
            c.sendall(b"\x08" + s("/a") + b"\x08" + s("/a"))        # DELETE_KEY twice
            self.assertEqual(recv_exact(c, 16), struct.pack("<qq", 1, 0))
            c.sendall(b"\x02" + s("/missing"))                      # GET of a missing key
            self.assertEqual(recv_vec(c), b"")

    def test_pytorch_20_21_queries(self):
        # PyTorch 2.0 and 2.1 send no VALIDATE and number ops as 1.13 does, plus APPEND,
        # MULTI_GET, MULTI_SET and CANCEL_WAIT as 9 .. 12.
        with connect(self.d.port) as c, connect(self.d.port) as writer:
            c.sendall(b"\x00" + s("/t/a") + s("1"))                 # SET
            c.sendall(b"\x09" + s("/t/a") + s("2"))                 # APPEND
            c.sendall(b"\x0b" + u64(2) + s("/t/b") + s("B") + s("/t/c") + s(""))  # MULTI_SET
            c.sendall(b"\x0a" + u64(3) + s("/t/a") + s("/t/b") + s("/t/c"))     # MULTI_GET
            self.assertEqual([recv_vec(c) for _ in range(3)], [b"12", b"B", b""])
            c.sendall(b"\x05" + u64(1) + s("/t/later"))             # WAIT, then
            c.sendall(b"\x0c")                                      # CANCEL_WAIT
            self.assertEqual(recv_exact(c, 1), b"\x01")
            writer.sendall(b"\x00" + s("/t/later") + s("now"))     # no late STOP_WAITING:
            c.sendall(b"\x02" + s("/t/a"))                          # the next reply is GET's
            self.assertEqual(recv_vec(c), b"12")

    def test_legacy_wait_is_parked_until_the_key_is_written(self):
        with connect(self.d.port) as waiter, connect(self.d.port) as writer:
            waiter.sendall(b"\x05" + u64(2) + s("w1") + s("w2"))
            writer.sendall(b"\x03" + s("w1") + struct.pack("<q", 1))
            recv_exact(writer, 8)
            self.assertTrue(no_bytes_within(waiter, 0.2))
            writer.sendall(b"\x00" + s("w2") + s("x"))
            self.assertEqual(recv_exact(waiter, 1), b"\x00")

    def test_legacy_watch_key_pushes(self):
        with connect(self.d.port) as watcher, connect(self.d.port) as writer:
            watcher.sendall(b"\x07" + s("/watched"))
            self.assertEqual(recv_exact(watcher, 1), b"\x03")
            writer.sendall(b"\x00" + s("/watched") + s("one"))
            writer.sendall(b"\x00" + s("/watched") + s("two"))
            writer.sendall(b"\x08" + s("/watched"))
            recv_exact(writer, 8)
            for kind, old, new in ((1, b"", b"one"), (0, b"one", b"two"), (2, b"two", b"")):
                self.assertEqual(recv_exact(watcher, 1), bytes([kind]))
                self.assertEqual(recv_vec(watcher), b"/watched")
                self.assertEqual(recv_vec(watcher), old)
                self.assertEqual(recv_vec(watcher), new)

    def test_legacy_add_on_text_closes_only_that_connection(self):
        with connect(self.d.port) as bad, connect(self.d.port) as good:
            bad.sendall(b"\x00" + s("txt") + s("hello") + b"\x03" + s("txt") + u64(1))
            self.assertTrue(closed_by_peer(bad))
            good.sendall(b"\x02" + s("txt"))
            self.assertEqual(recv_vec(good), b"hello")

    def test_modern_queries(self):
        with connect(self.d.port) as c:
            c.sendall(MODERN_VALIDATE)
            c.sendall(b"\x0d" + struct.pack("<I", 0xABCD1234))     # PING
            self.assertEqual(recv_exact(c, 4), struct.pack("<I", 0xABCD1234))
            c.sendall(b"\x01" + s("m/a") + s("1"))                  # SET
            c.sendall(b"\x09" + s("m/a") + s("2"))                  # APPEND
            c.sendall(b"\x0b" + u64(2) + s("m/b") + s("B") + s("m/c") + s(""))  # MULTI_SET
            c.sendall(b"\x0a" + u64(3) + s("m/a") + s("m/b") + s("m/c"))     # MULTI_GET
            self.assertEqual([recv_vec(c) for _ in range(3)], [b"12", b"B", b""])
            c.sendall(b"\x04" + s("m/n") + struct.pack("<q", -2))   # ADD
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], -2)
            c.sendall(b"\x0e" + s("m/q") + s("x") + b"\x0e" + s("m/q") + s("y"))  # QUEUE_PUSH
            c.sendall(b"\x10" + s("m/q"))                           # QUEUE_LEN
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], 2)
            c.sendall(b"\x0f" + s("m/q"))                           # QUEUE_POP
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], 2)
            self.assertEqual(recv_vec(c), b"x")
            c.sendall(b"\x0f" + s("m/empty"))
            self.assertEqual(struct.unpack("<q", recv_exact(c, 8))[0], 0)
            c.sendall(b"\x11")                                      # LIST
            (n,) = struct.unpack("<q", recv_exact(c, 8))
            keys = {recv_vec(c) for _ in range(n)}
            self.assertTrue({b"m/a", b"m/b", b"m/c", b"m/n"} <= keys)
            self.assertNotIn(b"m/q", keys)

    def test_modern_cancel_wait(self):
        with connect(self.d.port) as c, connect(self.d.port) as writer:
            c.sendall(MODERN_VALIDATE + b"\x06" + u64(1) + s("never/yet"))  # WAIT
            c.sendall(b"\x0c")                                      # CANCEL_WAIT
            self.assertEqual(recv_exact(c, 1), b"\x01")
            writer.sendall(b"\x00" + s("never/yet") + s("now"))     # 1.13 SET
            c.sendall(b"\x0d" + struct.pack("<I", 7))               # no late STOP_WAITING
            self.assertEqual(recv_exact(c, 4), struct.pack("<I", 7))

    def test_unknown_ops_and_bad_native_requests_close_the_connection(self):
        # 0x80..0x8F are native rendezvous requests (rendezvous/framer.h): a JOIN declaring a
        # 1 GB run id is refused from its length; 0x90 and up are never valid from a client.
        bad_join = b"\x80" + u64(1 << 30)
        for payload in (b"\x0d", MODERN_VALIDATE + b"\x13", MODERN_VALIDATE + b"\x90",
                        MODERN_VALIDATE + b"\xff", bad_join, MODERN_VALIDATE + bad_join):
            with connect(self.d.port) as c:
                c.sendall(payload)
                self.assertTrue(closed_by_peer(c), payload)
        self.assertTrue(self.d.alive())


if __name__ == "__main__":
    DAEMON = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
