"""The job scripts in scripts/jobs/ run as written, in their single-node form, against the
real ddprun: the Slurm script under a one-node Slurm environment (srun is a stand-in that runs
the command once, fake_bin/srun: no Slurm exists here), the PBS script under a one-host
PBS_NODEFILE, and the ssh script with a hostfile naming this machine. The Slurm script also
runs on two nodes (127.0.0.1 and 127.0.0.2, one agent each started by the stand-in srun, no
rendezvous flags); the multi-node form of the others needs pbsdsh or reachable ssh hosts,
which this machine lacks: refused with exit 2 before anything starts (tests/integration/fanout
runs both for real). The requeue scripts (docs/progress.md) run on one node with stand-ins for
scontrol and qsub: a job without progress exits 93 and is not requeued, one that fails with
progress is. The scripts also pass bash -n.

usage: job_scripts_test.py DDPRUN JOBS_DIR"""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

DDPRUN = None
JOBS = None
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "env_worker.py")
STEP_WORKER = os.path.join(HERE, "step_worker.py")
DEADLINE_S = 30


class JobScriptsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ddprun-jobs-it-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.out = os.path.join(self.dir, "out")
        os.makedirs(self.out)
        gpus = os.path.join(self.dir, "nvidia")
        for i in range(2):
            os.makedirs(os.path.join(gpus, "gpus", f"0000:{i + 1:02x}:00.0"))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("SLURM_", "PBS_", "PET_", "CUDA_VISIBLE_DEVICES"))}
        self.env.update({"DDPRUN": DDPRUN, "DDPRUN_PYTHON": "/usr/bin/python3",
                         "DDP_CLUSTER_TEST_OUT": self.out, "DDPRUN_PROC_NVIDIA": gpus,
                         "TRAIN_SCRIPT": WORKER,
                         "PATH": os.path.join(HERE, "fake_bin") + ":" + os.environ["PATH"]})

    def run_script(self, argv, extra):
        return subprocess.run(["/bin/bash", *argv], cwd=self.dir, env={**self.env, **extra},
                              capture_output=True, text=True, timeout=DEADLINE_S)

    def records(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        found = {}
        for path in glob.glob(os.path.join(self.out, "rank*.json")):
            with open(path) as f:
                record = json.load(f)
            found[int(record["env"]["RANK"])] = record
        return found

    def assert_refused(self, result, fragment):
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(fragment, result.stderr)
        self.assertEqual(os.listdir(self.out), [])

    def nodefile(self, hosts):
        path = os.path.join(self.dir, "nodefile")
        with open(path, "w") as f:
            f.write("".join(h + "\n" for h in hosts))
        return {"PBS_JOBID": "31.pbs", "PBS_NODEFILE": path, "PBS_O_WORKDIR": self.dir,
                "PBS_ENVIRONMENT": "PBS_BATCH"}

    def test_scripts_parse(self):
        for name in ("pbs_job.sh", "slurm_job.sbatch", "ssh_launch.sh", "slurm_requeue.sbatch",
                     "pbs_requeue.sh"):
            result = subprocess.run(["/bin/bash", "-n", os.path.join(JOBS, name)],
                                    capture_output=True, text=True, timeout=DEADLINE_S)
            self.assertEqual(result.returncode, 0, name + ": " + result.stderr)

    def test_slurm_script_single_node(self):
        slurm = {"SLURM_JOB_ID": "8080", "SLURM_JOB_NODELIST": "gpu01", "SLURM_NNODES": "1",
                 "SLURM_STEP_NODELIST": "gpu01", "SLURM_STEP_NUM_NODES": "1",
                 "SLURM_NODEID": "0", "SLURM_STEP_GPUS": "0,1"}
        records = self.records(self.run_script([os.path.join(JOBS, "slurm_job.sbatch"), "--x"],
                                               slurm))
        self.assertEqual(sorted(records), [0, 1])
        self.assertEqual(records[0]["env"]["TORCHELASTIC_RUN_ID"], "8080")
        self.assertEqual(records[0]["env"]["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertEqual(records[0]["argv"], ["--x"])

    def test_slurm_script_two_nodes(self):
        with socket.socket() as s:  # both "nodes" share this machine's ports
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # The stand-in srun starts both agents at once, as srun does; no rendezvous flags: the
        # c10d rendezvous on the first node (127.0.0.1), which node 1 keeps trying to reach
        # until node 0's agent hosts it. DDPRUN_RDZV_PORT: a free port instead of 29400.
        slurm = {"SLURM_JOB_ID": "8081", "SLURM_STEP_NODELIST": "127.0.0.[1-2]",
                 "SLURM_STEP_NUM_NODES": "2", "SLURM_STEP_GPUS": "0,1",
                 "DDPRUN_RDZV_PORT": str(port)}
        records = self.records(self.run_script([os.path.join(JOBS, "slurm_job.sbatch")], slurm))
        self.assertEqual(sorted(records), [0, 1, 2, 3])
        for record in records.values():
            self.assertEqual(record["env"]["TORCHELASTIC_RUN_ID"], "8081")
            self.assertEqual(record["env"]["WORLD_SIZE"], "4")
            self.assertEqual(record["env"]["CUDA_VISIBLE_DEVICES"], "0,1")

    def test_pbs_script_single_node(self):
        host = socket.gethostname()
        records = self.records(self.run_script([os.path.join(JOBS, "pbs_job.sh")],
                                               self.nodefile([host, host])))
        self.assertEqual(sorted(records), [0, 1])  # --nproc-per-node gpu: the 2 fake GPUs
        self.assertEqual(records[1]["env"]["TORCHELASTIC_RUN_ID"], "31.pbs")

    def test_pbs_script_two_nodes_needs_pbsdsh(self):
        # --launcher pbs on two nodes fans out through pbsdsh (tests/integration/fanout runs
        # it against a stand-in); here there is none, so nothing starts.
        host = socket.gethostname()
        self.assert_refused(self.run_script([os.path.join(JOBS, "pbs_job.sh")],
                                            self.nodefile([host, "other-node"])), "pbsdsh")

    def calls(self, name):
        path = os.path.join(self.out, name + ".calls")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def test_requeue_scripts_do_not_requeue_a_job_without_progress(self):
        # A worker that dies before its first beat: 2 restarts without progress, then exit 93;
        # one that beats a new step each round and fails: --max-restarts 3, then exit 1.
        slurm = {"SLURM_JOB_ID": "8082", "SLURM_STEP_NODELIST": "gpu01",
                 "SLURM_STEP_NUM_NODES": "1", "SLURM_NODEID": "0", "SLURM_STEP_GPUS": "0,1",
                 "TRAIN_SCRIPT": STEP_WORKER}
        host = socket.gethostname()
        scripts = [("slurm_requeue.sbatch", slurm, "scontrol", "requeue 8082"),
                   ("pbs_requeue.sh", {**self.nodefile([host]), "TRAIN_SCRIPT": STEP_WORKER},
                    "qsub", "REQUEUED=1")]
        for script, env, tool, requeued in scripts:
            with self.subTest(script=script):
                r = self.run_script([os.path.join(JOBS, script)], {**env, "MODE": "die"})
                self.assertEqual(r.returncode, 93, r.stderr)
                self.assertIn("not ", r.stderr)
                self.assertEqual(self.calls(tool), [])
                r = self.run_script([os.path.join(JOBS, script)], {**env, "MODE": "step"})
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(len(self.calls(tool)), 1, self.calls(tool))
                self.assertIn(requeued, self.calls(tool)[0])

    def test_ssh_script_with_this_host_and_two_hosts(self):
        hostfile = os.path.join(self.dir, "hosts")
        with open(hostfile, "w") as f:
            f.write(f"{socket.gethostname()} slots=3  # this machine\n")
        records = self.records(self.run_script(
            [os.path.join(JOBS, "ssh_launch.sh"), hostfile, WORKER, "a b"], {}))
        self.assertEqual(sorted(records), [0, 1, 2])
        self.assertEqual(records[2]["argv"], ["a b"])
        shutil.rmtree(self.out)
        os.makedirs(self.out)
        # The example's hosts do not exist here: refused before anything starts.
        self.assert_refused(self.run_script(
            [os.path.join(JOBS, "ssh_launch.sh"), os.path.join(JOBS, "hostfile.example"),
             WORKER], {}), "gpu-node-1")


if __name__ == "__main__":
    DDPRUN, JOBS = sys.argv.pop(1), sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration/testlib"))
    import testmain  # noqa: E402
    testmain.main()
