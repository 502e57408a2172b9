"""Job secrets (issue 21) with the real ddprun and ddp-rendezvous on one machine.

Two agents (127.0.0.2, 127.0.0.3) form a c10d job whose host agent embeds the daemon, or join a
standalone ddp-rendezvous. Attackers are raw Python sockets speaking the native protocol
(rendezvous/membership/wire.h, rendezvous/protocol.h), and a TCP proxy that records an agent's
bytes for a replay. Usage:
    test_secrets.py DDPRUN --daemon=DDP_RENDEZVOUS [TestClass]
"""
import glob
import os
import select
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testlib"))
from agents import AgentsCase  # noqa: E402
from procs import free_port, wait_for  # noqa: E402

DDPRUN = None
DAEMON = None
HERE = os.path.dirname(os.path.abspath(__file__))
GO_WORKER = os.path.join(HERE, "go_worker.sh")
FAST_CONF = "last_call_timeout=0.2,keep_alive_interval=0.2,join_timeout=20"
SECRET = "5ecret-for-the-integration-test-0123456789"
UNAUTHENTICATED = 12  # ddp::ErrorCode::kUnauthenticated


# ---- the native protocol, as an attacker writes it ------------------------------------------
def s(b):
    return struct.pack("<Q", len(b)) + b


def framed(type_, fields):
    """A native message of protocol 2: u8 type | u32 n | fields (rendezvous/membership/wire.h)."""
    return bytes([type_]) + struct.pack("<I", len(fields)) + fields


def version_hello():
    """HELLO: protocol 2, oldest 2, a release name; every native connection opens with it."""
    return framed(0x8A, struct.pack("<II", 2, 2) + s(b"0.2.0"))


def join_bytes(run_id, key="intruder", addr="127.0.0.9"):
    return framed(0x80, s(run_id.encode()) + s(key.encode()) + s(addr.encode()) +
                  struct.pack("<HIIIIqqqqIIiIIBBI", 1, 1, 2, 2, 0, 20000, 200, 30000, 200, 3, 0,
                              93, 2000, 5, 0, 0, 0))


def failure_bytes(round_=1):
    f = (s(b"") + struct.pack("<IIIiqq", 0, 0, 0, 9, 1, 0) + s(b"") + s(b"forged failure") +
         struct.pack("<BqQQB", 0, 0, 0, 0, 0))  # not hung, no step, no lines, may restart
    return framed(0x82, struct.pack("<QQ", round_, 1) + struct.pack("<I", len(f)) + f)


def leave_bytes():
    return framed(0x85, s(b"forged leave"))


def stopped_bytes(round_=1):
    return framed(0x83, struct.pack("<Q", round_))


def hello_bytes(run_id):
    return version_hello() + framed(0x88, s(run_id.encode()))


def frame_bytes(counter, inner, mac=b"\x00" * 32):
    return framed(0x89, struct.pack("<Q", counter) + mac + b"\x00" + s(inner))


def signed_frame(secret, run_id, challenge, counter, inner):
    """An AUTH_FRAME signed as rendezvous/auth/auth.h draws it (no key wrap)."""
    import hashlib
    import hmac
    key = hmac.new(secret.encode(), b"ddprun job key v1\0" + run_id.encode(), hashlib.sha256).digest()
    covered = b"\x00" + s(inner)
    mac = hmac.new(key, b"ddprun frame v1" + challenge + struct.pack("<Q", counter) +
                   s(run_id.encode()) + covered, hashlib.sha256).digest()
    return framed(0x89, struct.pack("<Q", counter) + mac + covered)


def read_message(sock, buf=b""):
    """Reads one framed message (type, fields); the buffer's rest is returned too."""
    while len(buf) < 5 or len(buf) < 5 + struct.unpack_from("<I", buf, 1)[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed")
        buf += chunk
    n = struct.unpack_from("<I", buf, 1)[0]
    return buf[0], buf[5:5 + n], buf[5 + n:]


def read_challenge(sock, timeout=5.0):
    sock.settimeout(timeout)
    buf = b""
    while True:
        t, fields, buf = read_message(sock, buf)
        if t == 0x97:
            return fields[:32]
        assert t == 0x99, t  # VERSION, the answer to HELLO


def read_errors(sock, want, timeout=5.0):
    """Reads pushes until `want` ERROR pushes came (or the deadline); returns their codes."""
    sock.settimeout(timeout)
    buf = b""
    codes = []
    while len(codes) < want:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        buf += chunk
        while buf:
            t = buf[0]
            if t != 0x95 and len(buf) >= 5:  # a native message: u8 type | u32 n | fields
                n = struct.unpack_from("<I", buf, 1)[0]
                if len(buf) < 5 + n:
                    break
                if t == 0x94:  # ERROR: u8 code, str
                    codes.append(buf[5])
                buf = buf[5 + n:]
            elif t == 0x95 and len(buf) >= 9:  # a framed store reply
                n = struct.unpack_from("<Q", buf, 1)[0]
                if len(buf) < 9 + n:
                    break
                buf = buf[9 + n:]
            else:
                break
    return codes


class Proxy:
    """A one-connection TCP proxy that records what the client sent."""

    def __init__(self, target_port):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target_port = target_port
        self.sent = b""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        client, _ = self.listener.accept()
        server = socket.create_connection(("127.0.0.1", self.target_port))
        peers = {client: server, server: client}
        try:
            while True:
                ready, _, _ = select.select(list(peers), [], [], 60)
                if not ready:
                    return
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        self.sent += data
                    peers[sock].sendall(data)
        finally:
            client.close()
            server.close()
            self.listener.close()


def cmdlines():
    out = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                out.append(f.read())
        except OSError:
            pass
    return out


class SecretCase(AgentsCase):
    AGENT_TIMEOUT_S = 60
    A = "127.0.0.2"
    B = "127.0.0.3"

    def setUp(self):
        super().setUp()
        self.port = free_port()
        self.run_id = "secret-" + self.id().rsplit(".", 1)[-1]
        self.secret_file = self.write_secret("secret", SECRET, 0o600)

    def write_secret(self, name, text, mode):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text + "\n")
        os.chmod(path, mode)
        return path

    def start(self, name, addr, secret_file=None, env_extra=None, conf=FAST_CONF, port=None):
        env = dict(os.environ, MARK_DIR=self.marks)
        env.pop("DDPRUN_SECRET", None)
        env.update(env_extra or {})
        if secret_file:
            conf += ",secret_file=" + secret_file
        args = [DDPRUN, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                "--rdzv-endpoint", "127.0.0.1:%d" % (port or self.port), "--rdzv-id",
                self.run_id, "--rdzv-conf", conf, "--local-addr", addr,
                "--shutdown-timeout", "5", "--no-python", GO_WORKER]
        return self.spawn(name, args, env)

    def start_host(self, name, addr, **kw):
        agent = self.start(name, addr, **kw)
        self.wait_hosting(agent)
        return agent

    def both_started(self):
        wait_for(lambda: len(self.started()) >= 2, 20, "both workers to start")

    def go(self):
        open(os.path.join(self.marks, "go"), "w").close()

    def assert_untouched(self, *agents):
        for a in agents:
            self.assertEqual(a.wait(), 0, a.stderr())
        # Started once each, restart count 0: no forged failure or stop restarted the job.
        self.assertEqual(sorted(os.path.basename(p) for p in
                                glob.glob(os.path.join(self.marks, "started.*"))),
                         ["started.0.0.0", "started.1.0.0"])

    def assert_refused(self, agent, *words):
        self.assertNotEqual(agent.wait(), 0, agent.stderr())
        err = agent.stderr()
        lines = [l for l in err.splitlines() if "secret" in l and ("error" in l or "refused" in l)]
        self.assertTrue(lines, err)
        for w in words:
            self.assertIn(w, lines[-1])


class SecretJobTest(SecretCase):
    def test_two_nodes_with_a_secret_file_and_no_secret_in_any_cmdline(self):
        a = self.start_host("a", self.A, secret_file=self.secret_file)
        b = self.start("b", self.B, secret_file=self.secret_file)
        self.both_started()
        for line in cmdlines():
            self.assertNotIn(SECRET.encode(), line)
        self.go()
        self.assert_untouched(a, b)

    def test_two_nodes_with_the_secret_in_the_environment(self):
        env = {"DDPRUN_SECRET": SECRET}
        a = self.start_host("a", self.A, env_extra=env)
        b = self.start("b", self.B, env_extra=env)
        self.both_started()
        self.go()
        self.assert_untouched(a, b)

    def test_wrong_and_missing_secrets_are_refused_and_the_job_is_untouched(self):
        a = self.start_host("a", self.A, secret_file=self.secret_file)
        wrong = self.start("wrong", "127.0.0.4",
                           secret_file=self.write_secret("wrong", "not-the-job-secret-at-all", 0o600),
                           conf=FAST_CONF + ",is_host=false")
        self.assert_refused(wrong, "does not match")
        none = self.start("none", "127.0.0.5", conf=FAST_CONF + ",is_host=false")
        self.assert_refused(none, "secret_file")
        b = self.start("b", self.B, secret_file=self.secret_file)
        self.both_started()
        self.go()
        self.assert_untouched(a, b)

    def test_a_secret_file_readable_by_others_is_refused(self):
        loose = self.write_secret("loose", SECRET, 0o644)
        agent = self.start("a", self.A, secret_file=loose)
        self.assertEqual(agent.wait(), 2, agent.stderr())
        errors = [l for l in agent.stderr().splitlines() if l.startswith("ddprun: error: ")]
        self.assertEqual(len(errors), 1, agent.stderr())
        self.assertIn("chmod 600 " + loose, errors[0])


class ForgeryTest(SecretCase):
    def test_forged_failure_leave_and_stop_change_nothing(self):
        a = self.start_host("a", self.A, secret_file=self.secret_file)
        b = self.start("b", self.B, secret_file=self.secret_file)
        self.both_started()
        # 1. Plain requests: a JOIN (refused), then reports from a connection that is no member.
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(version_hello() + join_bytes(self.run_id) + failure_bytes() +
                         leave_bytes() + stopped_bytes())
            codes = read_errors(sock, 4)
            self.assertEqual(codes[0], UNAUTHENTICATED, codes)
        # 2. Authenticated frames with a made-up MAC, for the job's run id.
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(hello_bytes(self.run_id) + frame_bytes(0, join_bytes(self.run_id)) +
                         frame_bytes(1, failure_bytes()) + frame_bytes(2, leave_bytes()) +
                         frame_bytes(3, stopped_bytes()))
            self.assertEqual(read_errors(sock, 4), [UNAUTHENTICATED] * 4)
        self.go()
        self.assert_untouched(a, b)

    def test_a_replayed_capture_fails_on_another_connection(self):
        a = self.start_host("a", self.A, secret_file=self.secret_file)
        proxy = Proxy(self.port)
        b = self.start("b", self.B, secret_file=self.secret_file, port=proxy.port,
                       conf=FAST_CONF + ",is_host=false")
        self.both_started()
        wait_for(lambda: proxy.sent.count(b"\x89") >= 3, 10, "a few authenticated frames")
        captured = proxy.sent
        self.assertEqual(captured[0], 0x8A, captured[:16])  # HELLO
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(captured)
            codes = read_errors(sock, 1)
            self.assertEqual(codes[:1], [UNAUTHENTICATED], codes)
        self.go()
        self.assert_untouched(a, b)


class ReplayTest(SecretCase):
    def test_a_genuine_frame_replayed_on_its_connection_or_another_is_refused(self):
        a = self.start_host("a", self.A, secret_file=self.secret_file)
        query = framed(0x87, b"")  # QUERY_WAITING: reads the job; harmless when genuine
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(hello_bytes(self.run_id))
            challenge = read_challenge(sock)
            genuine = signed_frame(SECRET, self.run_id, challenge, 0, query)
            sock.sendall(genuine)
            # Past the gate: the registry answers (this connection has not joined).
            self.assertEqual(read_errors(sock, 1), [1])  # kInvalidArgument
            sock.sendall(genuine)  # the same bytes again on the same connection
            self.assertEqual(read_errors(sock, 1), [UNAUTHENTICATED])
        with socket.create_connection(("127.0.0.1", self.port)) as other:
            other.sendall(hello_bytes(self.run_id))
            read_challenge(other)
            other.sendall(genuine)  # on another connection: another challenge
            self.assertEqual(read_errors(other, 1), [UNAUTHENTICATED])
        b = self.start("b", self.B, secret_file=self.secret_file)
        self.both_started()
        self.go()
        self.assert_untouched(a, b)


class StaticSecretTest(SecretCase):
    """--rdzv-backend static: node rank 0 hosts the daemon with the job's key pinned."""

    def start_static(self, name, rank, env_extra):
        env = dict(os.environ, MARK_DIR=self.marks)
        env.pop("DDPRUN_SECRET", None)
        env.update(env_extra)
        args = [DDPRUN, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "static",
                "--node-rank", str(rank), "--master-addr", "127.0.0.1", "--master-port",
                str(self.port), "--rdzv-id", self.run_id, "--rdzv-conf", "join_timeout=20",
                "--shutdown-timeout", "5", "--no-python", GO_WORKER]
        return self.spawn(name, args, env)

    def test_static_ranks_with_a_secret_and_a_secretless_intruder(self):
        env = {"DDPRUN_SECRET": SECRET}
        r0 = self.start_static("r0", 0, env)
        self.wait_hosting(r0, "node rank 0")
        intruder = self.start_static("intruder", 1, {})
        self.assert_refused(intruder, "requires its secret")
        r1 = self.start_static("r1", 1, env)
        self.both_started()
        self.go()
        self.assert_untouched(r0, r1)


class RequireSecretTest(SecretCase):
    def test_require_secret_refuses_a_secretless_job_and_serves_a_keyed_one(self):
        self.start_daemon(DAEMON, "--require-secret")
        conf = FAST_CONF + ",is_host=false"
        plain = self.start("plain", self.A, conf=conf)
        self.assert_refused(plain, "--require-secret")
        a = self.start("a", self.A, secret_file=self.secret_file, conf=conf)
        b = self.start("b", self.B, secret_file=self.secret_file, conf=conf)
        self.both_started()
        # Trust on first use: the first JOIN registered the key; a wrong secret is refused.
        wrong = self.start("wrong", "127.0.0.4", conf=conf,
                           secret_file=self.write_secret("wrong", "not-the-job-secret-at-all", 0o600))
        self.assert_refused(wrong, "does not match")
        self.go()
        self.assert_untouched(a, b)


if __name__ == "__main__":
    import testmain  # noqa: E402
    DDPRUN, DAEMON, argv = testmain.ddprun_argv(sys.argv)
    testmain.main(argv)
