"""PyTorch 2.x's own store tests against ddp-rendezvous (issue 30): test/distributed/test_store.py
and the elastic c10d and static rendezvous tests of Debian's pytorch 2.6 source package, which
scripts/debian_root.sh extracts into a cache directory of the root at set-up (never committed), run inside
the PyTorch 2.x root by torch_suite_inside.py; every TCPStore server they would start is a
fresh ddp-rendezvous on a free port that this driver (host side) starts on request.

Usage: /usr/bin/python3 run_torch_store_suite.py --daemon PATH
Exit 0 when every applicable test passed, 1 on any failure, 77 (Skipped) when the root or the
cached tests are missing, with the reason.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading

from store_server import HERE, StoreServer

sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import testmain  # noqa: E402
import torch_python  # noqa: E402

# Inside the root (the path its Python sees); scripts/debian_root.sh fills it.
SUITE_CACHE = "/var/cache/ddprun/pytorch2-tests"
MODULES = ["test_store", "c10d_rendezvous_backend_test", "static_rendezvous_test"]
DEADLINE_S = 600


def skip(reason):
    print("SKIPPED torch2 store suite: %s" % reason, file=sys.stderr)
    sys.exit(testmain.SKIP_RETURN_CODE)


def _bindable(host, port):
    """Whether this process can bind host:port now (as the daemon does, SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class DaemonSpawner:
    """Serves "new HOST PORT\\n" on a Unix socket: starts a ddp-rendezvous bound to HOST:PORT
    (PORT 0: a free one) and replies "PORT\\n"; when it cannot start, "taken\\n" if a process
    other than these daemons holds that port (this driver cannot bind it either), else
    "error WHY\\n" (a daemon of this suite has the port, the host does not resolve). Every daemon is stopped (SIGTERM, must exit 0) by
    close()."""

    def __init__(self, daemon, path):
        self.daemon, self.servers, self.errors = daemon, [], []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            with conn:
                words = conn.makefile("rb").readline().decode().split()
                if len(words) != 3 or words[0] != "new":
                    continue
                host, port = words[1], int(words[2])
                try:
                    server = StoreServer("daemon", self.daemon, host, port)
                    server.__enter__()
                except AssertionError as e:  # exited before ready
                    ours = {s.port for s in self.servers}  # fails as the in-process server does
                    taken = port != 0 and port not in ours and not _bindable(host, port)
                    conn.sendall(b"taken\n" if taken else b"error %s\n" % str(e).encode())
                    continue
                self.servers.append(server)
                conn.sendall(b"%d\n" % server.port)

    def close(self):
        self.sock.close()
        for s in self.servers:
            try:
                s.__exit__(None, None, None)
            except AssertionError as e:
                self.errors.append(str(e))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--daemon", required=True)
    args = parser.parse_args()
    why = torch_python.torch2_missing()
    if why:
        skip(why)
    suite_dir = os.path.join(SUITE_CACHE, "test", "distributed")
    if not os.path.isfile(os.path.join(torch_python.TORCH2_ROOT, suite_dir.lstrip("/"),
                                       "test_store.py")):
        skip("PyTorch 2.x's store tests are not at %s in %s (scripts/debian_root.sh fetches "
             "them; see its output)" % (suite_dir, torch_python.TORCH2_ROOT))
    with tempfile.TemporaryDirectory(prefix="ddp_torch2_suite_", dir="/tmp") as tmp:
        control = os.path.join(tmp, "control")
        spawner = DaemonSpawner(args.daemon, control)
        try:
            p = subprocess.run([torch_python.TORCH2_PYTHON,
                                os.path.join(HERE, "torch_suite_inside.py"), suite_dir, control,
                                *MODULES],
                               cwd=tmp, stdin=subprocess.DEVNULL, timeout=DEADLINE_S)
        finally:
            spawner.close()
    print("ddp-rendezvous daemons started: %d" % len(spawner.servers))
    for e in spawner.errors:
        print("daemon error: %s" % e)
    sys.exit(1 if p.returncode != 0 or spawner.errors else 0)


if __name__ == "__main__":
    main()
