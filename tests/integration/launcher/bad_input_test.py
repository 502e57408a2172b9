"""Bad input through the real ddprun binary: one error line with the fix, exit code 2, and
the program never starts (it would create a marker file)."""
import os
import sys
import unittest

import launcher_helpers as h


class BadInputTest(h.LauncherTestCase):
    def test_control_the_marker_program_does_start(self):
        # Proves the marker detects a start, so the absent marker below means something.
        result = self.run_ddprun(self.marker_command())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(os.path.exists(self.marker))

    def test_unknown_option(self):
        self.assert_usage_error(self.run_ddprun(["--bogus", *self.marker_command()]),
                                "unknown option --bogus", "--help")

    def test_nnodes_min_above_max(self):
        self.assert_usage_error(self.run_ddprun(["--nnodes", "3:2", *self.marker_command()]),
                                "--nnodes 3:2", "write it as 2:3")

    def test_missing_program(self):
        self.assert_usage_error(self.run_ddprun(["--nproc-per-node", "2"]), "missing PROGRAM")

    def test_unwritable_log_dir(self):
        # Root ignores permission bits, so block the directory with a regular file as parent.
        blocker = os.path.join(self.dir, "not-a-dir")
        open(blocker, "w").close()
        self.assert_usage_error(
            self.run_ddprun(["--log-dir", os.path.join(blocker, "logs"),
                             *self.marker_command()]),
            "--log-dir", "cannot be created", "choose a writable directory")

    def test_bad_numbers_and_names(self):
        cases = [
            (["--max-restarts", "lots"], "--max-restarts: bad value 'lots'"),
            (["--max-no-progress-restarts", "-1"], "--max-no-progress-restarts: bad value '-1'"),
            (["--no-progress-exit-code", "0"], "an integer from 1 to 255"),
            (["--straggler-factor", "0.5"], "--straggler-factor: bad value '0.5'"),
            (["--straggler-reports", "0"], "an integer from 1 to 1000"),
            (["--nproc-per-node", "0"], "--nproc-per-node"),
            (["--master-port", "99999"], "0 to 65535"),
            (["--signals-to-handle", "SIGTERM,SIGBOGUS"], "'SIGBOGUS'"),
            (["--shutdown-timeout", "-3"], "--shutdown-timeout"),
            (["-r", "7"], "--redirects"),
            (["--rdzv-backend", "etcd"], "needs --rdzv-endpoint"),
            (["--exclude-straggler"], "--exclude-straggler does not apply to a one-node job"),
        ]
        for args, fragment in cases:
            with self.subTest(args=args):
                self.assert_usage_error(self.run_ddprun([*args, *self.marker_command()]),
                                        fragment)

    def test_bad_pet_variable_is_named(self):
        self.assert_usage_error(
            self.run_ddprun(self.marker_command(), env_extra={"PET_NNODES": "3:2"}),
            "PET_NNODES=3:2")

    def test_bad_gpu_ids(self):
        gpus = self.fake_gpus(4)
        cases = [
            ("1,1", "listed twice"),
            ("-1", "negative"),
            ("one", "'one' is not a GPU id"),
            ("0,9", "GPU 9 does not exist"),
        ]
        for ids, fragment in cases:
            with self.subTest(ids=ids):
                self.assert_usage_error(
                    self.run_ddprun(["--gpu-ids", ids, *self.marker_command()], gpus),
                    f"--gpu-ids {ids}", fragment)
        self.assert_usage_error(
            self.run_ddprun(["--nproc-per-node", "3", "--gpu-ids", "1,2",
                             *self.marker_command()], gpus),
            "conflicts with --gpu-ids 1,2", "make it 2")

    def test_gpu_ids_on_a_machine_without_gpus(self):
        self.assert_usage_error(
            self.run_ddprun(["--gpu-ids", "0", *self.marker_command()], self.fake_gpus(0)),
            "no usable GPU")

    def test_nproc_gpu_without_gpus(self):
        # A faked empty driver directory, and this machine's real (GPU-less) inventory.
        for env in (self.fake_gpus(0), {}):
            with self.subTest(env=env):
                self.assert_usage_error(
                    self.run_ddprun(["--nproc-per-node", "gpu", *self.marker_command()], env),
                    "--nproc-per-node gpu: no GPU is found", "cpu or auto")

    def test_nproc_gpu_hidden_by_cuda_visible_devices(self):
        env = {**self.fake_gpus(2), "CUDA_VISIBLE_DEVICES": ""}
        self.assert_usage_error(
            self.run_ddprun(["--nproc-per-node", "gpu", *self.marker_command()], env),
            "CUDA_VISIBLE_DEVICES=")

    def test_missing_programs_and_interpreters(self):
        self.assert_usage_error(
            self.run_ddprun(["--no-python", os.path.join(self.dir, "nope")]),
            "was not found")
        self.assert_usage_error(self.run_ddprun(["missing_script.py"]),
                                "Python script 'missing_script.py' was not found")
        script = os.path.join(self.dir, "touch.py")
        with open(script, "w") as f:
            f.write(f"open({self.marker!r}, 'w').close()\n")
        self.assert_usage_error(
            self.run_ddprun([script], env_extra={"DDPRUN_PYTHON": "/nonexistent/python3"}),
            "Python interpreter '/nonexistent/python3'", "DDPRUN_PYTHON")
        # The same script with a real interpreter does start (control for the case above).
        self.assertEqual(self.run_ddprun([script]).returncode, 0)
        self.assertTrue(os.path.exists(self.marker))


if __name__ == "__main__":
    h.DDPRUN = sys.argv.pop(1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
