"""Start and stop a TCPStore-compatible server for the interop tests.

A server is either our daemon (`ddp-rendezvous`) or PyTorch's own TCPStore server (a
/usr/bin/python3 process running torch_store_server.py), so every test can first be checked
against the reference implementation. Both print one line "listening on HOST:PORT" when ready;
both bind port 0 and exit 0 on SIGTERM.
"""

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = "127.0.0.1"
READY_DEADLINE_S = 30.0
STOP_DEADLINE_S = 15.0


def server_argv(kind, daemon_path=None, port_file=None, host=HOST, port=0, python=None):
    """argv for a server of `kind`: "daemon" (needs daemon_path; on host:port) or "torch"
    (PyTorch's, under `python`: this one's by default)."""
    if kind == "daemon":
        if not daemon_path or not os.access(daemon_path, os.X_OK):
            raise SystemExit(f"ddp-rendezvous not found at {daemon_path!r}: pass --daemon PATH")
        argv = [daemon_path, "--host", host, "--port", str(port)]
        if port_file:
            argv += ["--port-file", port_file]
        return argv
    if kind == "torch":
        return [python or sys.executable, os.path.join(HERE, "torch_store_server.py"), HOST]
    raise SystemExit(f"unknown server kind {kind!r}: use 'daemon' or 'torch'")


class StoreServer:
    """Context manager: a running server; `.host`, `.port`, `.pid` once entered.

    Leaving the context sends SIGTERM and requires a clean exit 0 within STOP_DEADLINE_S
    (SIGKILL and an AssertionError otherwise).
    """

    def __init__(self, kind, daemon_path=None, host=HOST, port=0, python=None):
        self.kind = kind
        self._tmp = tempfile.TemporaryDirectory(prefix="ddp-interop-")
        self._port_file = os.path.join(self._tmp.name, "port") if kind == "daemon" else None
        self._argv = server_argv(kind, daemon_path, self._port_file, host, port, python)
        self.proc = None
        self.host = host
        self.port = None
        self._drain = None

    @property
    def pid(self):
        return self.proc.pid

    def __enter__(self):
        self.proc = subprocess.Popen(self._argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=None)
        try:
            line = self._read_ready_line()
            host_port = line.strip().rsplit(" ", 1)[-1]
            if not line.startswith("listening on ") or ":" not in host_port:
                raise AssertionError(f"{self.kind} server printed {line!r}, "
                                     "expected 'listening on HOST:PORT'")
            self.port = int(host_port.rsplit(":", 1)[1])
            if self._port_file:
                with open(self._port_file) as f:
                    written = int(f.read().strip())
                if written != self.port:
                    raise AssertionError(f"--port-file holds {written}, stdout said {self.port}")
        except BaseException:
            self._kill()
            raise
        # Keep draining stdout so a chatty server never blocks on a full pipe.
        self._drain = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self._drain.start()
        return self

    def _read_ready_line(self):
        deadline = time.monotonic() + READY_DEADLINE_S
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.kind} server not ready within {READY_DEADLINE_S}s")
            if not sel.select(timeout=left):
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                code = self.proc.wait(timeout=STOP_DEADLINE_S)
                raise AssertionError(f"{self.kind} server exited with {code} before ready")
            buf += chunk
        sel.close()
        return buf.split(b"\n", 1)[0].decode()

    def _kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __exit__(self, *exc):
        try:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.kind} server died during the test "
                                     f"(exit {self.proc.returncode})")
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self._kill()
                raise AssertionError(f"{self.kind} server ignored SIGTERM for {STOP_DEADLINE_S}s")
            if code != 0:
                raise AssertionError(f"{self.kind} server exited {code} on SIGTERM, expected 0")
        finally:
            if self.proc.poll() is None:
                self._kill()
            if self._drain:
                self._drain.join(timeout=STOP_DEADLINE_S)
            self.proc.stdout.close()
            self._tmp.cleanup()
        return False


def add_server_args(parser):
    parser.add_argument("--server", choices=["daemon", "torch"], default="daemon",
                        help="which server to test against (torch = PyTorch's own, the reference)")
    parser.add_argument("--daemon", help="path to ddp-rendezvous (for --server daemon)")
