"""Shared set-up of the status-port tests: a standalone ddp-rendezvous with --status-port, a
2-node c10d job of real ddprun agents on loopback addresses, HTTP helpers."""
import http.client
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
from procs import OutputProcess, wait_for  # noqa: E402

WORKER = os.path.join(HERE, "worker.sh")
FAST_CONF = "last_call_timeout=0.2,join_timeout=20,is_host=false"


class Daemon(OutputProcess):
    """ddp-rendezvous on 127.0.0.1, store and status on free ports."""

    def __init__(self, tmp, binary, extra=()):
        self.port_file = os.path.join(tmp, "daemon.port")
        self.status_file = os.path.join(tmp, "daemon.status_port")
        super().__init__(tmp, "daemon", [binary, "--host", "127.0.0.1", "--port", "0",
                                         "--port-file", self.port_file, "--status-port", "0",
                                         "--status-port-file", self.status_file] + list(extra),
                         dict(os.environ))
        wait_for(lambda: os.path.exists(self.port_file) and os.path.exists(self.status_file), 10,
                 "ddp-rendezvous to write its port files")
        with open(self.port_file) as f:
            self.port = int(f.read())
        with open(self.status_file) as f:
            self.status_port = int(f.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def get(port, path, method="GET", timeout=5):
    """(status, headers dict, body text) of one request to the status port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        conn.close()


def jobs(port):
    status, _, body = get(port, "/api/jobs")
    assert status == 200, body
    return {j["run_id"]: j for j in json.loads(body)["jobs"]}


def metrics(port):
    """{(name, labels text): value} of /metrics."""
    status, _, body = get(port, "/metrics")
    assert status == 200, body
    out = {}
    for line in body.splitlines():
        if line.startswith("#") or not line:
            continue
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)", line)
        assert m, line
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


class Job:
    """Two real ddprun agents (127.0.0.2 and 127.0.0.3, 2 workers each) of one c10d job on the
    daemon; the workers wait for the test's release files (worker.sh)."""

    def __init__(self, tmp, ddprun, daemon_port, run_id, max_restarts=1, conf=FAST_CONF,
                 first_extra=()):
        self.marks = os.path.join(tmp, "marks")
        os.makedirs(self.marks, exist_ok=True)
        self.run_id = run_id
        self.addrs = ["127.0.0.2", "127.0.0.3"]
        env = dict(os.environ, MARK_DIR=self.marks)
        self.agents = []
        for i, addr in enumerate(self.addrs):
            args = [ddprun, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", "127.0.0.1:%d" % daemon_port, "--rdzv-id", run_id,
                    "--rdzv-conf", conf, "--local-addr", addr, "--shutdown-timeout", "5",
                    "--max-restarts", str(max_restarts)]
            args += list(first_extra) if i == 0 else []
            args += ["--no-python", WORKER]
            self.agents.append(OutputProcess(tmp, "agent%d" % i, args, env, timeout=60))
            if i == 0 and conf != FAST_CONF:  # the first agent hosts the rendezvous
                wait_for(lambda: "hosting the rendezvous" in self.agents[0].stderr(), 20,
                         "the first agent to host the rendezvous")

    def started(self, attempt):
        return len([n for n in os.listdir(self.marks)
                    if n.startswith("started.") and n.endswith(".%d" % attempt)])

    def wait_started(self, attempt):
        wait_for(lambda: self.started(attempt) == 4, 30, "4 workers of attempt %d" % attempt)

    def release(self, attempt):
        open(os.path.join(self.marks, "release.%d" % attempt), "w").close()

    def group_ranks(self):
        """{advertised address: GROUP_RANK} as the agents' workers printed it."""
        for agent in self.agents:  # the agent relays its workers' lines as they come
            wait_for(lambda: len(re.findall(r"GROUP_RANK=", agent.stdout())) >= 2, 10,
                     "the workers' ENV lines on the agent's stdout")
        return {addr: set(re.findall(r"GROUP_RANK=(\d+)", agent.stdout()))
                for addr, agent in zip(self.addrs, self.agents)}

    def kill(self):
        for a in self.agents:
            a.kill()
