"""The daemon's status port with real processes (docs/status.md).

    test_status.py DDP_RENDEZVOUS DDPRUN ARTIFACT_DIR [TestClass]

JobTest: a real 2-node c10d job of ddprun agents on a standalone ddp-rendezvous --status-port,
scraped while it runs, after a worker failure (--max-restarts 1: the restart count moves by
exactly one) and after it ends; `ddprun status` against it.
MalformedTest: garbage, huge headers, bodies, slowloris half requests and a connection flood on
the status port while a PyTorch TCPStore client uses the store; both keep working.
ChromiumTest: headless Chromium renders the page (installing Debian's chromium if missing; the
test is skipped when it cannot be installed); the job rows are checked in the DOM and a
screenshot is kept in ARTIFACT_DIR/status_page.png.
"""
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import statuslib  # noqa: E402
from procs import free_port, wait_for  # noqa: E402

DAEMON = DDPRUN = ARTIFACTS = None


class Case(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory()
        self.tmp = self.tmpdir.name
        self.daemon = statuslib.Daemon(self.tmp, DAEMON)
        self.job = None

    def tearDown(self):
        if self.job is not None:
            self.job.kill()
        self.daemon.stop()
        self.tmpdir.cleanup()

    def ddprun_status(self, *args):
        r = subprocess.run([DDPRUN, "status"] + list(args), capture_output=True, text=True,
                           timeout=30)
        return r.returncode, r.stdout, r.stderr


class JobTest(Case):
    def test_scrape_during_a_job_across_a_restart(self):
        sp = self.daemon.status_port
        run_id = "status-job"
        self.job = statuslib.Job(self.tmp, DDPRUN, self.daemon.port, run_id)
        self.job.wait_started(0)

        # Round 1 runs: nodes, addresses and ranks as the agents' workers saw them.
        j = statuslib.jobs(sp)[run_id]
        self.assertEqual((j["state"], j["round"], j["restart_count"], j["max_restarts"]),
                         ("running", 1, 0, 1), j)
        self.assertEqual((j["node_count"], j["world_size"], j["min_nodes"], j["max_nodes"]),
                         (2, 4, 2, 2))
        self.assertIsNone(j["last_failure"])
        seen = self.job.group_ranks()
        by_addr = {n["addr"]: n for n in j["nodes"]}
        self.assertEqual(set(by_addr), set(self.job.addrs))
        for addr, node in by_addr.items():
            self.assertEqual(node["role"], "participant")
            self.assertEqual(node["local_world_size"], 2)
            self.assertEqual({str(node["group_rank"])}, seen[addr], (addr, seen))
            self.assertEqual((node["first_rank"], node["last_rank"]),
                             (2 * node["group_rank"], 2 * node["group_rank"] + 1))
        m = statuslib.metrics(sp)
        label = '{run_id="%s"}' % run_id
        self.assertEqual(m[("ddp_rdzv_job_nodes", label)], 2)
        self.assertEqual(m[("ddp_rdzv_job_workers", label)], 4)
        self.assertEqual(m[("ddp_rdzv_job_restarts", label)], 0)
        self.assertEqual(m[("ddp_rdzv_job_max_restarts", label)], 1)
        self.assertEqual(m[("ddp_rdzv_job_connections", label)], 2)
        self.assertEqual(m[("ddp_rdzv_jobs", '{state="running"}')], 1)
        self.assertEqual(m[("ddp_rdzv_rounds_total", "")], 1)
        self.assertEqual(m[("ddp_rdzv_restarts_total", "")], 0)
        self.assertEqual(m[("ddp_rdzv_round_latency_seconds_count", "")], 1)
        self.assertGreaterEqual(m[("ddp_rdzv_native_requests_total", "")], 2)  # the JOINs
        self.assertGreater(m[("process_resident_memory_bytes", "")], 1 << 20)
        self.assertGreaterEqual(m[("ddp_rdzv_connections", "")], 2)

        # `ddprun status`: the table, one job with its nodes, the JSON, an unknown run id.
        code, out, err = self.ddprun_status("127.0.0.1:%d" % sp)
        self.assertEqual(code, 0, err)
        self.assertRegex(out, r"RUN ID +STATE +ROUND +RESTARTS +NODES +WORKERS +GOODPUT +STRAGGLERS +LAST FAILURE\n")
        self.assertRegex(out, r"\nstatus-job +running +1 +0/1 +2 +4 +0.0% +0 +-\n")
        code, out, err = self.ddprun_status("127.0.0.1:%d" % sp, run_id)
        self.assertEqual(code, 0, err)
        for addr, node in by_addr.items():
            self.assertRegex(out, r"\n\S+ +%s +%d +%d-%d +2 +participant\n" % (
                addr.replace(".", r"\."), node["group_rank"], node["first_rank"],
                node["last_rank"]))
        code, out, err = self.ddprun_status("127.0.0.1:%d" % sp, run_id, "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["job"]["run_id"], run_id)
        code, out, err = self.ddprun_status("127.0.0.1:%d" % sp, "no-such-job")
        self.assertEqual(code, 3)
        self.assertEqual(out, "")
        self.assertIn("no job 'no-such-job'", err)
        self.assertEqual(err.count("\n"), 1, err)

        # Group rank 1's local rank 0 exits 3: one restart, the failure recorded.
        self.job.release(0)
        self.job.wait_started(1)
        j = statuslib.jobs(sp)[run_id]
        self.assertEqual((j["state"], j["round"], j["restart_count"]), ("running", 2, 1), j)
        self.assertEqual(j["failures"]["worker_failed"], 1)
        f = j["last_failure"]["failure"]
        self.assertEqual(j["last_failure"]["reason"], "worker_failed")
        self.assertEqual((f["rank"], f["local_rank"], f["group_rank"], f["exit_code"]),
                         (2, 0, 1, 3), j["last_failure"])
        self.assertEqual(sorted(n["addr"] for n in j["nodes"]), self.job.addrs)
        m = statuslib.metrics(sp)
        self.assertEqual(m[("ddp_rdzv_job_restarts", label)], 1)
        self.assertEqual(m[("ddp_rdzv_restarts_total", "")], 1)
        self.assertEqual(m[("ddp_rdzv_failures_total", '{cause="worker_failed"}')], 1)
        self.assertEqual(m[("ddp_rdzv_rounds_total", "")], 2)
        code, out, err = self.ddprun_status("127.0.0.1:%d" % sp)
        self.assertEqual(code, 0, err)
        self.assertRegex(out, r"\nstatus-job +running +2 +1/1 +2 +4 +0.0% +0 +rank 2 on \S+: exit code 3")

        # Attempt 1 succeeds: the job finishes with exit code 0, the restart count stays at 1.
        self.job.release(1)
        for agent in self.job.agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        j = statuslib.jobs(sp)[run_id]
        self.assertEqual((j["state"], j["exit_code"], j["restart_count"]), ("finished", 0, 1), j)
        self.assertIsNotNone(j["finished_at"])
        m = statuslib.metrics(sp)
        self.assertEqual(m[("ddp_rdzv_jobs", '{state="finished"}')], 1)
        self.assertEqual(m[("ddp_rdzv_restarts_total", "")], 1)

    def test_unreachable_status_port_is_one_line(self):
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        code, out, err = self.ddprun_status("127.0.0.1:%d" % port)
        self.assertEqual(code, 1)
        self.assertIn("cannot connect to the status port 127.0.0.1:%d" % port, err)
        self.assertEqual(err.count("\n"), 1, err)


class EmbeddedTest(unittest.TestCase):
    """ddprun --status-port on the agent that hosts the rendezvous in-process."""

    def test_host_agent_serves_the_status(self):
        with tempfile.TemporaryDirectory() as tmp:
            rdzv_port, status_port = free_port(), free_port()
            conf = statuslib.FAST_CONF.replace(",is_host=false", "")
            job = statuslib.Job(tmp, DDPRUN, rdzv_port, "embedded", conf=conf,
                                first_extra=["--status-port", str(status_port)])
            try:
                job.wait_started(0)
                j = statuslib.jobs(status_port)["embedded"]
                self.assertEqual((j["state"], j["node_count"], j["world_size"]),
                                 ("running", 2, 4), j)
                self.assertEqual(sorted(n["addr"] for n in j["nodes"]), job.addrs)
                m = statuslib.metrics(status_port)
                self.assertEqual(m[("ddp_rdzv_job_nodes", '{run_id="embedded"}')], 2)
                self.assertNotIn("--status-port", job.agents[1].stderr())  # not forwarded
                job.release(0)
                job.wait_started(1)
                self.assertEqual(statuslib.jobs(status_port)["embedded"]["restart_count"], 1)
                job.release(1)
                for agent in job.agents:
                    self.assertEqual(agent.wait(), 0, agent.stderr())
            finally:
                job.kill()


class MalformedTest(Case):
    def store_roundtrip(self, store, i):
        start = time.monotonic()
        store.set("k%d" % i, "v%d" % i)
        self.assertEqual(store.get("k%d" % i), b"v%d" % i)
        return time.monotonic() - start

    def raw(self, payload, read=True):
        with socket.create_connection(("127.0.0.1", self.daemon.status_port), timeout=10) as s:
            s.sendall(payload)
            return s.recv(4096) if read else b""

    def test_bad_clients_leave_store_and_status_serving(self):
        import torch.distributed as dist
        store = dist.TCPStore("127.0.0.1", self.daemon.port, is_master=False,
                              timeout=datetime.timedelta(seconds=10))
        self.store_roundtrip(store, 0)
        # Garbage, an oversized header, a body, a bad escape, a wrong method.
        self.assertTrue(self.raw(os.urandom(3000)).startswith(b"HTTP/1.1 400"))
        self.assertTrue(self.raw(b"\x00\xff\r\n\r\n").startswith(b"HTTP/1.1 400"))
        self.assertTrue(self.raw(b"GET / HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n")
                        .startswith(b"HTTP/1.1 431"))
        self.assertTrue(self.raw(b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
                        .startswith(b"HTTP/1.1 413"))
        self.assertTrue(self.raw(b"GET /api/jobs/%zz HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400"))
        status, headers, body = statuslib.get(self.daemon.status_port, "/metrics", "DELETE")
        self.assertEqual((status, headers.get("Allow")), (405, "GET, HEAD"))
        status, _, body = statuslib.get(self.daemon.status_port, "/nowhere")
        self.assertEqual(status, 404)
        self.assertEqual(body.count("\n"), 1)

        # Slowloris: 100 connections (over the cap of 64) each holding half a request.
        held = []
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", self.daemon.status_port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        begun = time.monotonic()
        # The store answers at once while they are held.
        worst = max(self.store_roundtrip(store, i) for i in range(1, 200))
        self.assertLess(worst, 2.5)  # at once, not after the 5 s deadline (loaded machine)
        # Each held connection ends: 503 at once beyond the cap, closed at the 5 s deadline.
        answers = []
        for s in held:
            s.settimeout(10)
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            answers.append(data)
            s.close()
        elapsed = time.monotonic() - begun
        self.assertLess(elapsed, 8.0)
        busy = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        closed = [a for a in answers if a == b""]
        # 64 held until the deadline, the rest refused at once (a refusal whose 503 the kernel
        # lost to a reset reads as closed).
        self.assertEqual(len(busy) + len(closed), 100, [a[:20] for a in answers])
        self.assertGreaterEqual(len(busy), 30)

        # Afterwards everything answers as before.
        self.store_roundtrip(store, 1000)
        m = statuslib.metrics(self.daemon.status_port)
        # 36 over the cap, 64 slowloris, 2 garbage, the big header, the body.
        self.assertGreaterEqual(m[("ddp_rdzv_status_rejected_total", "")], 36 + 64 + 4)
        self.assertEqual(m[("ddp_rdzv_status_connections", "")], 1)  # this scrape
        self.assertGreaterEqual(m[("ddp_rdzv_store_ops_total", '{op="SET"}')], 201)
        self.assertGreaterEqual(m[("ddp_rdzv_store_keys", "")], 201)
        self.assertIsNone(self.daemon.proc.poll())


class ChromiumTest(Case):
    def chromium(self):
        path = shutil.which("chromium")
        if path:
            return path
        if os.geteuid() != 0:
            self.skipTest("chromium is not installed and this is not root")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        r = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
        if r.returncode != 0:  # a fresh machine may have no package lists yet
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=300, env=env)
            r = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env)
        path = shutil.which("chromium")
        if not path:
            self.skipTest("cannot install Debian's chromium: " + r.stderr.strip()[-300:])
        return path

    def run_chromium(self, binary, url, *extra):
        profile = tempfile.mkdtemp(dir=self.tmp)
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--user-data-dir=" + profile,
                "--virtual-time-budget=3000"] + list(extra) + [url]
        return subprocess.run(args, capture_output=True, text=True, timeout=120)

    def test_page_renders_the_jobs(self):
        binary = self.chromium()
        run_id = "status-page"
        self.job = statuslib.Job(self.tmp, DDPRUN, self.daemon.port, run_id)
        self.job.wait_started(0)
        url = "http://127.0.0.1:%d/" % self.daemon.status_port
        r = self.run_chromium(binary, url, "--dump-dom")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        dom = r.stdout.split("<script")[0]  # what the script drew, not the script's own text
        self.assertIn('<tr class="job" data-run-id="status-page">', dom)
        self.assertIn('class="state-running">running</td>', dom)
        self.assertIn("<td>127.0.0.2</td>", dom)
        self.assertIn("<td>127.0.0.3</td>", dom)
        self.assertEqual(dom.count('<tr class="node">'), 2)
        self.assertNotIn("cannot reach the daemon", dom)
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "status_page.png")
        if os.path.exists(shot):
            os.remove(shot)
        r = self.run_chromium(binary, url, "--screenshot=" + shot, "--window-size=1280,900")
        self.assertTrue(os.path.getsize(shot) > 1000 if os.path.exists(shot) else False,
                        r.stderr[-2000:])
        # Rank 2 prints its ENV line and exits 3: the page shows that line (docs/diagnosis.md).
        self.job.release(0)
        self.job.wait_started(1)
        r = self.run_chromium(binary, url, "--dump-dom")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        dom = r.stdout.split("<script")[0]
        self.assertIn("<summary>status-page: rank 2 on ", dom)
        self.assertRegex(dom, r'<div>last lines of output</div><pre class="lines">ENV RANK=2 '
                              r'LOCAL_RANK=0 GROUP_RANK=1 WORLD_SIZE=4 RC=0</pre>')
        self.job.release(1)
        for agent in self.job.agents:
            self.assertEqual(agent.wait(), 0, agent.stderr())

    def test_a_1000_node_job_stays_readable(self):
        # 1000 simulated agents (bench/rendezvous's rdzv_bench) hold a running job; the page
        # lists every node but keeps that job's node table closed (more than 64 nodes).
        binary = self.chromium()
        bench = os.path.join(os.path.dirname(DDPRUN), "rdzv_bench")
        agents = subprocess.Popen([bench, "--port", str(self.daemon.port), "--agents", "1000",
                                   "--run-id", "big", "--hold", "25"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(agents.stderr.close)
        self.addCleanup(agents.wait)
        self.addCleanup(agents.kill)

        def running():
            if agents.poll() is not None:
                self.fail("rdzv_bench ended: " + agents.stderr.read().decode()[-2000:])
            job = statuslib.jobs(self.daemon.status_port).get("big")
            return job is not None and job["state"] == "running" and job["node_count"] == 1000
        wait_for(running, 20, "a running 1000-node job")
        url = "http://127.0.0.1:%d/" % self.daemon.status_port
        r = self.run_chromium(binary, url, "--dump-dom")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        dom = r.stdout.split("<script")[0]
        self.assertIn('<tr class="job" data-run-id="big">', dom)
        self.assertEqual(dom.count('<tr class="node">'), 1000)
        self.assertIn('<details data-run-id="big">', dom)  # closed: no "open" attribute
        self.assertNotIn('<details data-run-id="big" open', dom)
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "status_page_1000_nodes.png")
        if os.path.exists(shot):
            os.remove(shot)
        self.run_chromium(binary, url, "--screenshot=" + shot, "--window-size=1280,900")
        self.assertTrue(os.path.exists(shot) and os.path.getsize(shot) > 1000)


if __name__ == "__main__":
    DAEMON, DDPRUN, ARTIFACTS = sys.argv[1:4]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[4:])
