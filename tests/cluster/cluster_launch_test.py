"""The real ddprun inside (simulated) Slurm and PBS allocations and with --hosts/--hostfile:
single-node jobs run with what the scheduler says; launches needing other machines from this
one process (ssh, --launcher pbs) are refused with exit 2 before anything starts (multi-node
allocations run: tests/integration/allocation). The Slurm and PBS environments are the variables those systems set,
written by hand (no Slurm or PBS server runs here); GPUs are a fake /proc/driver/nvidia.

usage: cluster_launch_test.py DDPRUN"""
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
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "env_worker.py")
DEADLINE_S = 30
SCHEDULER_PREFIXES = ("SLURM_", "SLURMD_", "PBS_", "PET_")


class ClusterLaunchTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ddprun-cluster-it-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.out = os.path.join(self.dir, "out")
        os.makedirs(self.out)
        self.marker = os.path.join(self.dir, "started")

    def fake_gpus(self, count):
        root = os.path.join(self.dir, "driver", "nvidia")
        for i in range(count):
            gpu = os.path.join(root, "gpus", f"0000:{i + 1:02x}:00.0")
            os.makedirs(gpu)
            with open(os.path.join(gpu, "information"), "w") as f:
                f.write("Model: Fake GPU\n")
        os.makedirs(os.path.join(root, "gpus"), exist_ok=True)
        return {"DDPRUN_PROC_NVIDIA": root}

    def run_ddprun(self, args, env_extra, program=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(SCHEDULER_PREFIXES) and k not in ("CUDA_VISIBLE_DEVICES",
                                                                     "DDPRUN_PROC_NVIDIA")}
        env.update({"DDPRUN_PYTHON": PYTHON, "DDP_CLUSTER_TEST_OUT": self.out})
        env.update(env_extra)
        program = program or [WORKER, "--arg", "a b"]
        return subprocess.run([DDPRUN, *args, *program], cwd=self.dir, env=env,
                              capture_output=True, text=True, timeout=DEADLINE_S)

    def records(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        found = {}
        for path in glob.glob(os.path.join(self.out, "rank*.json")):
            with open(path) as f:
                record = json.load(f)
            found[int(record["env"]["RANK"])] = record
        return found

    def assert_refused(self, result, *fragments):
        msg = f"rc={result.returncode}\nstdout={result.stdout!r}\nstderr={result.stderr!r}"
        self.assertEqual(result.returncode, 2, msg)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, msg)
        self.assertTrue(lines[0].startswith("ddprun: error: "), msg)
        for fragment in fragments:
            self.assertIn(fragment, lines[0], msg)
        self.assertEqual(glob.glob(os.path.join(self.out, "*")), [], "a worker started: " + msg)
        self.assertFalse(os.path.exists(self.marker), msg)

    def slurm(self, nodelist, **extra):
        env = {"SLURM_JOB_ID": "90210", "SLURM_JOB_NODELIST": nodelist,
               "SLURM_NNODES": str(len(nodelist.split(","))), "SLURM_NODEID": "0"}
        env.update(extra)
        return env

    def pbs(self, hosts):
        path = os.path.join(self.dir, "nodefile")
        with open(path, "w") as f:
            f.write("".join(h + "\n" for h in hosts))
        return {"PBS_JOBID": "4711.pbs-server", "PBS_NODEFILE": path,
                "PBS_ENVIRONMENT": "PBS_BATCH"}

    def test_slurm_single_node_uses_step_gpus_and_job_id(self):
        env = {**self.fake_gpus(4), **self.slurm("gpu-a", SLURM_STEP_GPUS="1,3",
                                                   SLURM_JOB_GPUS="0,1,2,3")}
        records = self.records(self.run_ddprun([], env))
        self.assertEqual(sorted(records), [0, 1])
        for record in records.values():
            self.assertEqual(record["env"]["CUDA_VISIBLE_DEVICES"], "1,3")
            self.assertEqual(record["env"]["WORLD_SIZE"], "2")
            self.assertEqual(record["env"]["TORCHELASTIC_RUN_ID"], "90210")
            self.assertEqual(record["argv"], ["--arg", "a b"])

    def test_slurm_cgroup_renumbered_gpus(self):
        env = {**self.fake_gpus(2), **self.slurm("gpu-a", SLURM_STEP_GPUS="6,7",
                                                   CUDA_VISIBLE_DEVICES="0,1")}
        records = self.records(self.run_ddprun([], env))
        self.assertEqual({r["env"]["CUDA_VISIBLE_DEVICES"] for r in records.values()}, {"0,1"})
        self.assertEqual(len(records), 2)

    def test_explicit_flags_win_over_slurm(self):
        env = {**self.fake_gpus(4), **self.slurm("gpu-a", SLURM_STEP_GPUS="1,3")}
        records = self.records(self.run_ddprun(["--nproc-per-node", "3", "--rdzv-id", "mine"],
                                               env))
        self.assertEqual(sorted(records), [0, 1, 2])
        self.assertEqual(records[0]["env"]["TORCHELASTIC_RUN_ID"], "mine")

    def test_slurm_multi_node_bad_rendezvous_port_is_refused(self):
        env = self.slurm("node[01-04,07],gpu-a", SLURM_NNODES="6", SLURM_NODEID="3",
                         DDPRUN_RDZV_PORT="70000")
        self.assert_refused(self.run_ddprun([], env), "DDPRUN_RDZV_PORT", "70000")

    def test_slurm_malformed_nodelist_is_refused(self):
        self.assert_refused(self.run_ddprun([], self.slurm("node[01-04")), "SLURM_JOB_NODELIST",
                            "never closed")

    def test_launcher_local_ignores_the_allocation(self):
        env = self.slurm("node[01-02]")
        records = self.records(self.run_ddprun(["--launcher", "local"], env))
        self.assertEqual(records[0]["env"]["TORCHELASTIC_RUN_ID"], "none")

    def test_pbs_single_host_nodefile(self):
        host = socket.gethostname()
        records = self.records(self.run_ddprun(["--nproc-per-node", "2"],
                                               self.pbs([host] * 4)))
        self.assertEqual(sorted(records), [0, 1])
        self.assertEqual(records[1]["env"]["TORCHELASTIC_RUN_ID"], "4711.pbs-server")

    def test_launcher_pbs_without_pbsdsh_is_refused(self):
        # Two nodes: --launcher pbs fans out through pbsdsh, which this machine lacks.
        host = socket.gethostname()
        env = self.pbs([host, host, "other-node", "other-node"])
        self.assert_refused(self.run_ddprun(["--launcher", "pbs"], env), "--launcher pbs",
                            "pbsdsh")

    def test_hosts_localhost_runs_its_slots_here(self):
        records = self.records(self.run_ddprun(["--hosts", "localhost:3"], {}))
        self.assertEqual(sorted(records), [0, 1, 2])
        self.assertEqual(records[0]["cwd"], os.path.realpath(self.dir))

    def test_hosts_and_hostfile_needing_unknown_machines_are_refused(self):
        # Fan-outs over ssh (tests/integration/fanout): hosts that do not resolve stop them
        # before anything starts.
        self.assert_refused(self.run_ddprun(["--hosts", "h1.invalid,h2.invalid:4"], {}),
                            "h1.invalid")
        hostfile = os.path.join(self.dir, "hosts")
        with open(hostfile, "w") as f:
            f.write("# cluster\nnode-a.invalid slots=4\nnode-b.invalid slots=4\n")
        self.assert_refused(self.run_ddprun(["--hostfile", hostfile], {}), "node-a.invalid")
        with open(hostfile, "w") as f:
            f.write("node-a slots=4\nnode-a slots=2\n")
        self.assert_refused(self.run_ddprun(["--hostfile", hostfile], {}),
                            hostfile + ":2: host 'node-a' is listed twice")
        self.assert_refused(self.run_ddprun(["--hosts", "x", "--ssh-port", "0"], {}),
                            "--ssh-port")
        self.assert_refused(self.run_ddprun(["--ssh-user", "bob"], {}),
                            "only applies to ssh launches")


if __name__ == "__main__":
    DDPRUN = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration/testlib"))
    import testmain  # noqa: E402
    testmain.main()
