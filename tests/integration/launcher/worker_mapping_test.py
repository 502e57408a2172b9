"""What workers receive from the command line, through the real ddprun and agent: GPU
selection on a fake GPU machine, worker counts, program arguments after PROGRAM."""
import glob
import json
import os
import sys
import unittest

import launcher_helpers as h

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dump_worker.py")


class WorkerMappingTest(h.LauncherTestCase):
    def launch(self, args, env_extra=None, program_args=(), program=WORKER):
        out = os.path.join(self.dir, "out")
        os.makedirs(out, exist_ok=True)
        env = {"DDPRUN_TEST_OUT": out, **(env_extra or {})}
        result = self.run_ddprun([*args, program, *program_args], env)
        self.assertEqual(result.returncode, 0, result.stderr)
        records = {}
        for path in glob.glob(os.path.join(out, "rank*.json")):
            with open(path) as f:
                record = json.load(f)
            records[int(record["env"]["RANK"])] = record
        return records

    def test_gpu_ids_become_cuda_visible_devices_in_order(self):
        records = self.launch(["--gpu-ids", "1,6,3"], self.fake_gpus(8))
        self.assertEqual(sorted(records), [0, 1, 2])
        for rank, record in records.items():
            self.assertEqual(record["env"]["CUDA_VISIBLE_DEVICES"], "1,6,3")
            self.assertEqual(record["env"]["LOCAL_WORLD_SIZE"], "3")

    def test_virtual_local_rank_gives_each_worker_its_own_gpu(self):
        records = self.launch(["--gpu_ids", "1,6,3", "--virtual-local-rank"], self.fake_gpus(8))
        self.assertEqual({r: rec["env"]["CUDA_VISIBLE_DEVICES"] for r, rec in records.items()},
                         {0: "1", 1: "6", 2: "3"})
        # As torchrun's --virtual-local-rank: every worker is device 0 of its own set.
        self.assertEqual({rec["env"]["LOCAL_RANK"] for rec in records.values()}, {"0"})

    def test_gpu_ids_index_the_inherited_visible_set(self):
        env = {**self.fake_gpus(8), "CUDA_VISIBLE_DEVICES": "4,5,6,7"}
        records = self.launch(["--gpu-ids", "3,1"], env)
        self.assertEqual(sorted(records), [0, 1])
        for record in records.values():
            self.assertEqual(record["env"]["CUDA_VISIBLE_DEVICES"], "7,5")

    def test_nproc_gpu_counts_fake_gpus_and_leaves_visibility_alone(self):
        env = {**self.fake_gpus(8), "CUDA_VISIBLE_DEVICES": "2,0"}
        records = self.launch(["--nproc-per-node", "gpu"], env)
        self.assertEqual(sorted(records), [0, 1])
        for record in records.values():
            self.assertEqual(record["env"]["CUDA_VISIBLE_DEVICES"], "2,0")

    def test_nproc_auto_without_gpus_uses_cpus(self):
        records = self.launch(["--nproc-per-node", "auto"], self.fake_gpus(0))
        self.assertEqual(len(records), os.cpu_count())

    def test_options_after_program_belong_to_it(self):
        records = self.launch(["--nproc-per-node", "2", "--role", "trainer"],
                              program_args=["--lr", "3", "--nproc-per-node", "9"])
        self.assertEqual(sorted(records), [0, 1])
        for record in records.values():
            self.assertEqual(record["argv"], ["--lr", "3", "--nproc-per-node", "9"])
            self.assertEqual(record["env"]["ROLE_NAME"], "trainer")
            self.assertEqual(record["env"]["WORLD_SIZE"], "2")

    def test_module_runs_under_python_dash_m(self):
        env = {"PYTHONPATH": os.path.dirname(WORKER)}
        records = self.launch(["--nproc-per-node", "2", "-m"], env, ["--x", "1"],
                              program="dump_worker")
        self.assertEqual(sorted(records), [0, 1])
        self.assertEqual(records[1]["argv"], ["--x", "1"])

    def test_pet_variables_reach_the_agent(self):
        records = self.launch([], {"PET_NPROC_PER_NODE": "3", "PET_MAX_RESTARTS": "2"})
        self.assertEqual(sorted(records), [0, 1, 2])
        self.assertEqual(records[0]["env"]["TORCHELASTIC_MAX_RESTARTS"], "2")


if __name__ == "__main__":
    h.DDPRUN = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
