"""ddprun's NVML path: a fake libnvidia-ml.so.1 found through LD_LIBRARY_PATH answers the GPU
count; when its init fails ddprun falls back to /proc/driver/nvidia (absent here: no GPUs)."""
import glob
import os
import sys
import unittest

import launcher_helpers as h

FAKE_NVML_DIR = None  # argv[2]: the directory holding the fake libnvidia-ml.so.1


class NvmlTest(h.LauncherTestCase):
    def nvml_env(self, **extra):
        return {"LD_LIBRARY_PATH": FAKE_NVML_DIR, **extra}

    def test_gpu_count_comes_from_nvml(self):
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        env = self.nvml_env(FAKE_NVML_COUNT="3", OUT=out)
        result = self.run_ddprun(["--nproc-per-node", "gpu", "--no-python", "/bin/sh", "-c",
                                  'touch "$OUT/w$LOCAL_RANK"'], env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["w0", "w1", "w2"])

    def test_gpu_ids_are_checked_against_nvml(self):
        env = self.nvml_env(FAKE_NVML_COUNT="2")
        self.assert_usage_error(self.run_ddprun(["--gpu-ids", "0,2", *self.marker_command()], env),
                                "GPU 2 does not exist", "2 GPUs found (NVML)")

    def test_failed_nvml_init_falls_back_to_proc(self):
        if os.path.exists("/proc/driver/nvidia/gpus"):
            self.skipTest("this machine has a real NVIDIA driver")
        env = self.nvml_env(FAKE_NVML_COUNT="3", FAKE_NVML_FAIL="1")
        self.assert_usage_error(
            self.run_ddprun(["--nproc-per-node", "gpu", *self.marker_command()], env),
            "no GPU is found (/proc/driver/nvidia/gpus)")


if __name__ == "__main__":
    h.DDPRUN = sys.argv.pop(1)
    FAKE_NVML_DIR = sys.argv.pop(1)
    if not glob.glob(os.path.join(FAKE_NVML_DIR, "libnvidia-ml.so.1")):
        sys.exit(f"no libnvidia-ml.so.1 in {FAKE_NVML_DIR}")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
