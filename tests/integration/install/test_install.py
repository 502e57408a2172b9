"""`cmake --install` into a temporary prefix, then use only what it installed: the programs
(a 2-worker job run by the installed ddprun), the man pages, the documentation, and the
worker SDK package (an out-of-tree worker built with find_package and run under that ddprun).
Usage:
    test_install.py BUILD_DIR [TestClass]
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = None
ENV = dict(os.environ, DDPRUN_PYTHON="/usr/bin/python3", OMP_NUM_THREADS="1")


def run(argv, timeout=300, **kwargs):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=ENV, stdin=subprocess.DEVNULL, **kwargs)
    if p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(argv), p.returncode, p.stdout))
    return p.stdout


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory()
        self.prefix = os.path.join(self.tmpdir.name, "prefix")
        run(["cmake", "--install", BUILD, "--prefix", self.prefix])

    def tearDown(self):
        self.tmpdir.cleanup()

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_programs_man_pages_docs_and_a_job_from_the_prefix(self):
        for prog in ("ddprun", "ddp-rendezvous"):
            self.assertTrue(os.access(self.path("bin", prog), os.X_OK), prog)
            with open(self.path("share", "man", "man1", prog + ".1")) as f:
                page = f.read()
            self.assertIn(".TH " + prog.upper(), page)
            self.assertIn("\\-\\-help", page)  # the options made it into the page
        with open(self.path("share", "man", "man1", "ddprun.1")) as f:
            self.assertIn("local\\-rank\\-arg", f.read())
        docs = self.path("share", "doc", "ddprun")
        for doc in ("README.md", "docs/launcher.md", "docs/benchmarks.md",
                    "examples/python/train_ddp.py", "examples/python/launch_legacy.py"):
            self.assertTrue(os.path.isfile(os.path.join(docs, doc)), doc)
        out = run([self.path("bin", "ddprun"), "--nproc-per-node", "2",
                   os.path.join(docs, "examples", "python", "train_ddp.py"), "--epochs", "1",
                   "--samples", "512"], cwd=self.tmpdir.name)
        self.assertIn("world size 2, backend gloo", out)
        self.assertIn("epoch 0 loss", out)

    def test_out_of_tree_worker_with_find_package_runs_under_the_installed_ddprun(self):
        config = self.path("lib", "cmake", "ddp_worker_sdk", "ddp_worker_sdkConfig.cmake")
        if not os.path.exists(config):
            self.skipTest("the worker SDK is not part of this build (no LibTorch)")
        build = os.path.join(self.tmpdir.name, "consumer")
        run(["cmake", "-S", os.path.join(HERE, "consumer"), "-B", build, "-G", "Ninja",
             "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_PREFIX_PATH=" + self.prefix])
        run(["cmake", "--build", build], timeout=600)
        out = run([self.path("bin", "ddprun"), "--nproc-per-node", "2", "--no-python",
                   os.path.join(build, "allreduce_worker")])
        self.assertIn("installed sdk rank 0 of 2 sum 3", out)
        self.assertIn("installed sdk rank 1 of 2 sum 3", out)


class PackageTest(unittest.TestCase):
    def test_cpack_deb_installs_with_apt(self):
        with tempfile.TemporaryDirectory() as tmp:
            run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                 "-B", tmp])
            debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
            self.assertEqual(len(debs), 1, os.listdir(tmp))
            deb = os.path.join(tmp, debs[0])
            self.assertRegex(debs[0], r"^ddprun_\d+\.\d+\.\d+_[a-z0-9]+\.deb$")
            depends = run(["dpkg-deb", "--field", deb, "Depends"])
            self.assertIn("libc6", depends)  # dpkg-shlibdeps ran
            files = run(["dpkg-deb", "--contents", deb])
            for path in ("./usr/bin/ddprun", "./usr/bin/ddp-rendezvous",
                         "./usr/share/man/man1/ddprun.1", "./usr/share/doc/ddprun/README.md"):
                self.assertIn(path, files)
            # What `apt install ./ddprun_*.deb` resolves, without changing this machine.
            plan = run(["apt-get", "install", "--simulate", "--no-install-recommends", deb])
            self.assertRegex(plan, r"Inst ddprun ")
            root = os.path.join(tmp, "root")
            run(["dpkg-deb", "--extract", deb, root])
            self.assertIn("ddprun", run([os.path.join(root, "usr", "bin", "ddprun"),
                                         "--version"]))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../testlib"))
    import testmain  # noqa: E402
    testmain.main()
