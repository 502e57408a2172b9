"""A minimal PyTorch 1.13 TCPStore wire client on a plain socket (see shared/tcpstore.md).

Used where the torch API cannot reach: WATCH_KEY (not bound in Python 1.13) and raw keys the
client API would prefix with "/". Every receive has a deadline (socket timeout).
"""

import socket
import struct

SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS, WATCH_KEY, DELETE_KEY = range(9)
KEY_UPDATED, KEY_CREATED, KEY_DELETED, KEY_CALLBACK_REGISTERED = range(4)


def _str(b):
    return struct.pack("<Q", len(b)) + b


class RawStore:
    def __init__(self, host, port, timeout_s=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.settimeout(timeout_s)

    def close(self):
        self.sock.close()

    def send(self, query, *args):
        self.sock.sendall(bytes([query]) + b"".join(args))

    def recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"server closed the connection ({len(out)}/{n} bytes read)")
            out += chunk
        return out

    def recv_u8(self):
        return self.recv_exact(1)[0]

    def recv_i64(self):
        return struct.unpack("<q", self.recv_exact(8))[0]

    def recv_bytes(self):
        (n,) = struct.unpack("<Q", self.recv_exact(8))
        return self.recv_exact(n)

    # Operations on raw (unprefixed) keys.
    def set(self, key, value):
        self.send(SET, _str(key), _str(value))

    def get(self, key):
        self.send(WAIT, struct.pack("<Q", 1), _str(key))
        if self.recv_u8() != 0:
            raise AssertionError("WAIT before GET did not answer STOP_WAITING")
        self.send(GET, _str(key))
        return self.recv_bytes()

    def check(self, keys):
        self.send(CHECK, struct.pack("<Q", len(keys)), *[_str(k) for k in keys])
        reply = self.recv_u8()
        if reply not in (0, 1):
            raise AssertionError(f"CHECK replied {reply}, expected READY=0 or NOT_READY=1")
        return reply == 0

    def watch(self, key):
        self.send(WATCH_KEY, _str(key))
        reply = self.recv_u8()
        if reply != KEY_CALLBACK_REGISTERED:
            raise AssertionError(f"WATCH_KEY replied {reply}, expected {KEY_CALLBACK_REGISTERED}")

    def next_push(self):
        """One watch notification: (type, key, old, new)."""
        kind = self.recv_u8()
        return kind, self.recv_bytes(), self.recv_bytes(), self.recv_bytes()
