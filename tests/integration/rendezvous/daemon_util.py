"""Starts and stops a real ddp-rendezvous process for integration tests.

The daemon binds port 0 and writes --port-file; readiness is its "listening on" stdout
line, waited for with a deadline (never a sleep).
"""
import os
import selectors
import signal
import socket
import struct
import subprocess
import tempfile
import time


class Daemon:
    def __init__(self, binary, *extra_args, ready_timeout=10.0, preexec_fn=None):
        self._dir = tempfile.TemporaryDirectory(prefix="rdzv-test-")
        self.port_file = os.path.join(self._dir.name, "port")
        # stderr goes to a file: a pipe nobody drains could fill up and stall the daemon.
        self.stderr_path = os.path.join(self._dir.name, "stderr")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [binary, "--port", "0", "--port-file", self.port_file, *extra_args],
                stdout=subprocess.PIPE, stderr=err, preexec_fn=preexec_fn)
        self.ready_line = read_line(self.proc.stdout, ready_timeout)
        if not self.ready_line.startswith("listening on "):
            text = self.stderr_text()
            self.kill()
            raise RuntimeError(f"daemon not ready: {self.ready_line!r}; stderr: {text}")
        self.port = int(self.ready_line.rsplit(":", 1)[1])
        with open(self.port_file) as f:
            if int(f.read()) != self.port:
                raise RuntimeError("port file disagrees with the listening line")

    def alive(self):
        return self.proc.poll() is None

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Signals the daemon and returns its exit code (waits with a deadline)."""
        if self.alive():
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def stderr_text(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")


def read_line(stream, timeout):
    """One stdout line, or "" when the deadline passes or the stream ends first."""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                break
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
    finally:
        sel.close()
    return buf.split(b"\n", 1)[0].decode()


# Wire helpers (little-endian, as PyTorch sends on x86-64).
def u64(n):
    return struct.pack("<Q", n)


def s(b):
    b = b if isinstance(b, bytes) else b.encode()
    return u64(len(b)) + b


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return out


def recv_vec(sock):
    (n,) = struct.unpack("<Q", recv_exact(sock, 8))
    return recv_exact(sock, n)


def connect(port, timeout=5.0):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


MODERN_VALIDATE = b"\x00" + struct.pack("<I", 0x3C85F7CE)


def closed_by_peer(sock, timeout=5.0):
    """True when the peer closes the connection within the deadline."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
