"""Real etcd processes for integration tests: a cluster of 1..N members on loopback, on free
ports (etcd cannot bind port 0: ports are picked free and the cluster is started again on new
ports when a member loses a port race), data in /dev/shm, killed and removed by stop().

    cluster = etcd.Cluster(members=3)      # raises etcd.Unavailable when etcd is not installed
    cluster.endpoints()                    # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
    cluster.kill(i); cluster.leader()      # member i SIGKILLed; index of the leader
    cluster.stop()
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from procs import free_port, poll_until

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


class Unavailable(Exception):
    pass


def _post(url, body, timeout=1.0):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def make_certificates(directory):
    """A CA (ca.pem), a server certificate for 127.0.0.1 (server.pem/.key), a client certificate
    (client.pem/.key) signed by it, and an unrelated CA (other.pem), made with openssl."""
    key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    script = (
        "set -e; cd %s; exec 2>openssl.log\n"
        "openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=ddp-test-ca\n"
        "openssl req -x509 %s -keyout other.key -out other.pem -days 2 -subj /CN=other\n"
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth,"
        "clientAuth\\n' > ext\n"
        "for n in server client; do openssl req %s -keyout $n.key -out $n.csr -subj /CN=$n; "
        "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem "
        "-days 2 -extfile ext; done\n" % (directory, key, key, key))
    subprocess.run(["bash", "-c", script], check=True)
    return directory


class Cluster:
    def __init__(self, members=1, extra_args=(), ready_s=20, tls_dir=None, host="127.0.0.1",
                 prefix=()):
        """host: the address the members listen on; prefix: what runs them (e.g. `ip netns
        exec NS`: then readiness is only "still running after a moment", as this process
        cannot reach them; clients retry until they answer)."""
        self.host = host
        self.prefix = list(prefix)
        # Where this process reaches the members (in another namespace: nowhere; see _healthy).
        self.reach = host if not self.prefix else "127.0.0.1"
        if not os.access(ETCD, os.X_OK):
            raise Unavailable("etcd is not installed (apt-get install etcd-server)")
        self.dir = tempfile.mkdtemp(prefix="ddp-etcd-it-", dir="/dev/shm")
        self.procs = []
        for attempt in range(5):
            self.client_ports = [free_port() for _ in range(members)]
            peer_ports = [free_port() for _ in range(members)]
            initial = ",".join("m%d=http://%s:%d" % (i, host, p) for i, p in enumerate(peer_ports))
            self.procs = []
            self.tls_dir = tls_dir
            tls = [] if not tls_dir else [
                "--cert-file=%s/server.pem" % tls_dir, "--key-file=%s/server.key" % tls_dir,
                "--trusted-ca-file=%s/ca.pem" % tls_dir, "--client-cert-auth"]
            for i in range(members):
                client = "%s://%s:%d" % ("https" if tls_dir else "http", host,
                                         self.client_ports[i])
                peer = "http://%s:%d" % (host, peer_ports[i])
                with open(os.path.join(self.dir, "m%d.log" % i), "wb") as log:
                    self.procs.append(self._spawn(self.prefix + [ETCD, "--name=m%d" % i,
                     "--data-dir=%s/m%d-%d" % (self.dir, i, attempt),
                     "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
                     "--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
                     "--initial-cluster=" + initial, "--initial-cluster-state=new",
                        "--heartbeat-interval=50", "--election-timeout=500", *tls, *extra_args],
                        log))
            if poll_until(lambda: self._healthy() or self._any_exited(), ready_s) \
                    and not self._any_exited():
                return
            self._kill_all()
        raise RuntimeError("etcd did not start; logs in " + self.dir)

    @staticmethod
    def _spawn(argv, log):
        return subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

    def _any_exited(self):
        return any(p.poll() is not None for p in self.procs)

    def _healthy(self):
        if self.prefix:  # another network namespace: running a moment after start is all
            time.sleep(1.0)  # the point: give a bad flag or a taken port time to end it
            return not self._any_exited()
        if self.tls_dir:  # a TLS member: its port accepting connections is enough here
            import socket
            for port in self.client_ports:
                try:
                    socket.create_connection((self.reach, port), 0.5).close()
                except OSError:
                    return False
            return True
        for port in self.client_ports:
            try:
                _post("http://%s:%d/v3/kv/range" % (self.reach, port), {"key": "AA=="}, 0.5)
            except Exception:
                return False
        return True

    def endpoints(self, members=None):
        idx = range(len(self.client_ports)) if members is None else members
        return ",".join("%s:%d" % (self.host, self.client_ports[i]) for i in idx)

    def leader(self):
        """Index of the current leader (None when no live member answers)."""
        for i, port in enumerate(self.client_ports):
            if self.procs[i].poll() is not None:
                continue
            try:
                st = _post("http://%s:%d/v3/maintenance/status" % (self.reach, port), {}, 0.5)
            except Exception:
                continue
            if st.get("leader") == st.get("header", {}).get("member_id"):
                return i
        return None

    def kill(self, i, sig=signal.SIGKILL):
        self.procs[i].send_signal(sig)
        if sig == signal.SIGKILL:
            self.procs[i].wait()

    def put(self, key, value):
        import base64
        _post("http://%s:%d/v3/kv/put" % (self.reach, self.client_ports[0]),
              {"key": base64.b64encode(key.encode()).decode(),
               "value": base64.b64encode(value.encode()).decode()})

    def get(self, key):
        """(value, lease id) of `key` now, decoded; None when it does not exist."""
        import base64
        r = _post("http://%s:%d/v3/kv/range" % (self.reach, self.client_ports[0]),
                  {"key": base64.b64encode(key.encode()).decode()})
        kvs = r.get("kvs", [])
        if not kvs:
            return None
        return (base64.b64decode(kvs[0].get("value", "")).decode(errors="replace"),
                int(kvs[0].get("lease", 0)))

    def keys(self, prefix):
        """Every key under `prefix` (text) now, decoded."""
        import base64
        start = base64.b64encode(prefix.encode()).decode()
        end = base64.b64encode(prefix[:-1].encode() + bytes([ord(prefix[-1]) + 1])).decode()
        r = _post("http://%s:%d/v3/kv/range" % (self.reach, self.client_ports[0]),
                  {"key": start, "range_end": end, "keys_only": True})
        return [base64.b64decode(kv["key"]).decode() for kv in r.get("kvs", [])]

    def history(self, key):
        """Every write of `key` still in etcd's history: [(mod_revision, value)], oldest first
        (read at each revision; the tests' etcd never compacts)."""
        import base64
        url = "http://%s:%d/v3/kv/range" % (self.reach, self.client_ports[0])
        k = base64.b64encode(key.encode()).decode()
        now = int(_post(url, {"key": k})["header"]["revision"])
        writes = {}
        for rev in range(1, now + 1):
            for kv in _post(url, {"key": k, "revision": rev}).get("kvs", []):
                writes[int(kv["mod_revision"])] = base64.b64decode(kv.get("value", "")).decode(errors="replace")
        return sorted(writes.items())

    def _kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()

    def stop(self):
        self._kill_all()
        shutil.rmtree(self.dir, ignore_errors=True)
