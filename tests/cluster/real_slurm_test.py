"""ddprun under a real single-host Slurm: munged, slurmctld and slurmd (Debian slurm-wlm 22.05
and munge) started by the test in a scratch directory, a fake GPU gres backed by dummy
character devices, and `srun`/`sbatch --wait` running the real ddprun. Checks what srun really
sets (SLURM_STEP_NODELIST, SLURM_NODEID, SLURM_STEP_GPUS, SLURM_JOB_ID) and what ddprun makes
of it. Skipped with a message where the Slurm daemons are not installed or not root (slurmd
and mknod need root).

usage: real_slurm_test.py DDPRUN JOBS_DIR"""
import json
import os
import select
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration",
                                "testlib"))
import procs  # noqa: E402

DDPRUN = None
JOBS = None
DEADLINE_S = 60
TOOLS = ("munged", "slurmctld", "slurmd", "srun", "sbatch")
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "env_worker.py")


def free_port():
    # Slurm's ports live in its config file, so one is picked here and handed to the daemon.
    return procs.free_port("")


def wait_for_line(proc, text, deadline_s):
    """Reads proc's output until a line containing `text` arrives (the daemon's own readiness
    message) or the deadline passes; the rest of its output keeps being drained."""
    found = threading.Event()

    def drain():
        for line in proc.stdout:
            if text in line:
                found.set()
    threading.Thread(target=drain, daemon=True).start()
    return found.wait(deadline_s)


@unittest.skipUnless(all(shutil.which(t) or os.path.exists("/usr/sbin/" + t) for t in TOOLS)
                     and os.geteuid() == 0,
                     "needs root and Debian slurmctld, slurmd, slurm-client and munge")
class RealSlurmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ddp-slurm-", dir="/tmp")
        cls.procs = []
        d = cls.dir
        host = socket.gethostname().split(".")[0]
        for sub in ("state", "spool", "out", "gpus/gpus/0000:01:00.0", "gpus/gpus/0000:02:00.0"):
            os.makedirs(os.path.join(d, sub))
        with open(os.path.join(d, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(d, "munge.key"), 0o600)
        for i in (0, 1):  # gres/gpu wants character devices; these are /dev/null's numbers
            os.mknod(os.path.join(d, f"nvidia{i}"), 0o600 | 0o020000, os.makedev(1, 3))
        conf = os.path.join(d, "slurm.conf")
        with open(conf, "w") as f:
            f.write(f"""ClusterName=ddptest
SlurmctldHost={host}
SlurmUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
NodeName={host} CPUs={os.cpu_count()} Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write(f"NodeName={host} Name=gpu File={d}/nvidia[0-1]\n")
        cls.env = {**{k: v for k, v in os.environ.items()
                      if not k.startswith(("SLURM_", "PET_", "CUDA_VISIBLE_DEVICES"))},
                   "SLURM_CONF": conf, "DDPRUN_PROC_NVIDIA": os.path.join(d, "gpus"),
                   "DDP_CLUSTER_TEST_OUT": os.path.join(d, "out"),
                   "DDPRUN_PYTHON": "/usr/bin/python3"}
        cls.munged_pid = None
        try:
            # munged daemonizes and its first process exits once the daemon is ready: that
            # exit is the readiness event.
            munged = subprocess.run(
                ["munged", "--force", f"--key-file={d}/munge.key", f"--socket={d}/munge.sock",
                 f"--pid-file={d}/munged.pid", f"--seed-file={d}/munge.seed",
                 f"--log-file={d}/munged.log"],
                env=cls.env, capture_output=True, text=True, timeout=DEADLINE_S)
            if munged.returncode != 0:
                raise RuntimeError("munged failed: " + munged.stderr)
            with open(os.path.join(d, "munged.pid")) as f:
                cls.munged_pid = int(f.read().strip())
            for argv, ready in ((["slurmctld", "-D", "-f", conf], "Running as primary controller"),
                                (["slurmd", "-D", "-f", conf], "slurmd started on")):
                proc = subprocess.Popen(argv, env=cls.env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
                cls.procs.append(proc)
                if not wait_for_line(proc, ready, DEADLINE_S):
                    raise RuntimeError(f"{argv[0]} did not start within {DEADLINE_S}s")
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for proc in reversed(cls.procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        if cls.munged_pid is not None:  # not our child: wait for its exit through a pidfd
            try:
                pidfd = os.pidfd_open(cls.munged_pid)
                os.kill(cls.munged_pid, signal.SIGTERM)
                if not select.select([pidfd], [], [], 10)[0]:
                    os.kill(cls.munged_pid, signal.SIGKILL)
                os.close(pidfd)
            except ProcessLookupError:
                pass
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        out = self.env["DDP_CLUSTER_TEST_OUT"]
        for name in os.listdir(out):
            os.remove(os.path.join(out, name))

    def records(self):
        found = {}
        out = self.env["DDP_CLUSTER_TEST_OUT"]
        for name in os.listdir(out):
            with open(os.path.join(out, name)) as f:
                record = json.load(f)["env"]
            found[int(record["RANK"])] = record
        return found

    def srun_ddprun(self, *srun_args):
        return subprocess.run(["srun", "-N1", "--ntasks-per-node=1", *srun_args, DDPRUN, WORKER],
                              cwd=self.dir, env=self.env, capture_output=True, text=True,
                              timeout=DEADLINE_S)

    def test_srun_two_gpus(self):
        result = self.srun_ddprun("--gres=gpu:2")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        records = self.records()
        self.assertEqual(sorted(records), [0, 1])
        for record in records.values():
            self.assertEqual(record["CUDA_VISIBLE_DEVICES"], "0,1")
            self.assertEqual(record["WORLD_SIZE"], "2")
            self.assertTrue(record["SLURM_JOB_ID"].isdigit(), record)
            self.assertEqual(record["TORCHELASTIC_RUN_ID"], record["SLURM_JOB_ID"])

    def test_srun_one_gpu(self):
        result = self.srun_ddprun("--gres=gpu:1")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        records = self.records()
        self.assertEqual(sorted(records), [0])
        self.assertIn(records[0]["CUDA_VISIBLE_DEVICES"], ("0", "1"))

    def test_sbatch_job_script(self):
        # The repository's job script as written, resized to this one small node on the
        # command line (sbatch options override the #SBATCH lines).
        env = {**self.env, "DDPRUN": DDPRUN, "TRAIN_SCRIPT": WORKER}
        result = subprocess.run(
            ["sbatch", "--wait", "--nodes=1", "--gpus-per-node=2", "--cpus-per-task=1",
             "--export=ALL", f"--output={self.dir}/sbatch-%j.out",
             os.path.join(JOBS, "slurm_job.sbatch")],
            cwd=self.dir, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
        logs = ""
        for name in os.listdir(self.dir):
            if name.startswith("sbatch-"):
                with open(os.path.join(self.dir, name)) as f:
                    logs += f.read()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr + logs)
        records = self.records()
        self.assertEqual(sorted(records), [0, 1], logs)
        self.assertEqual(records[0]["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertEqual(records[0]["TORCHELASTIC_RUN_ID"], records[0]["SLURM_JOB_ID"])


if __name__ == "__main__":
    DDPRUN, JOBS = sys.argv.pop(1), sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration/testlib"))
    import testmain  # noqa: E402
    testmain.main()
