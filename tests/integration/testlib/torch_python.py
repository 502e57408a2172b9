"""Which Python the workers of a PyTorch integration test run under (issue 30): CTest runs each
such test twice, once as it always has (PyTorch 1.13, Debian 12's /usr/bin/python3) and once
with DDP_TEST_TORCH=2 (PyTorch 2.x in the Debian 13 root of scripts/torch2_root.sh, through
scripts/torch2-python). Only workers and PyTorch clients switch; the tests' own driver
processes stay on the host's Python.

    import torch_python
    class MyTest(unittest.TestCase):
        def setUp(self):
            self.python = torch_python.worker_python(self)   # skipTest(reason) when it cannot

With DDP_TEST_TORCH=2, worker_python() calls skipTest with the exact reason when the root is
missing, this checkout is not bound inside it (workers run scripts and binaries at their host
paths), /tmp is not bound, or torch does not import there; testmain then exits 77 and CTest
shows Skipped, never Passed. That check runs once per process (about 2-4 s, one torch import).
"""
import os
import subprocess

HOST_PYTHON = "/usr/bin/python3"  # Debian 12's, with python3-torch 1.13
CHECKOUT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "..", "..", ".."))
TORCH2_PYTHON = os.path.join(CHECKOUT, "scripts", "torch2-python")
TORCH2_ROOT = os.environ.get("DDP_TORCH2_ROOT", "/var/lib/ddprun/trixie")
_why_not = []  # [reason or None] once checked


def version():
    """The PyTorch major version the workers are asked to run: "1" (default) or "2"."""
    v = os.environ.get("DDP_TEST_TORCH", "1")
    if v not in ("1", "2"):
        raise ValueError("DDP_TEST_TORCH must be 1 or 2, not %r" % v)
    return v


def torch2_missing():
    """Why PyTorch 2.x workers cannot run here, or None when they can (checked once)."""
    if not _why_not:
        _why_not.append(_check_torch2())
    return _why_not[0]


def _check_torch2():
    if not os.access(os.path.join(TORCH2_ROOT, "usr", "bin", "python3"), os.X_OK):
        return "no PyTorch 2.x root at %s (scripts/torch2_root.sh makes it)" % TORCH2_ROOT
    if not _same(os.path.join(TORCH2_ROOT, "tmp"), "/tmp"):
        return "/tmp is not bound inside %s (run scripts/torch2_root.sh)" % TORCH2_ROOT
    inside = os.path.join(TORCH2_ROOT, CHECKOUT.lstrip("/"))
    if not _same(inside, CHECKOUT):
        return ("this checkout (%s) is not bound inside %s (run its scripts/torch2_root.sh)"
                % (CHECKOUT, TORCH2_ROOT))
    try:
        p = subprocess.run([TORCH2_PYTHON, "-c", "import torch"], cwd="/tmp",
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "cannot run %s: %s" % (TORCH2_PYTHON, e)
    if p.returncode != 0:
        return "torch does not import in %s: %s" % (TORCH2_ROOT, p.stderr.strip()[-300:])
    return None


def _same(a, b):
    """Whether a and b are one directory (a bind mount of b; ismount misses a bind mount of a
    directory on the same file system)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def python_for(case, v):
    """The worker interpreter for PyTorch major version `v` ("1" or "2"); for "2" calls
    case.skipTest(reason) when PyTorch 2.x workers cannot run here."""
    if v == "1":
        return HOST_PYTHON
    why = torch2_missing()
    if why:
        case.skipTest(why)
    return TORCH2_PYTHON


def worker_python(case):
    """The worker interpreter DDP_TEST_TORCH asks for (see python_for)."""
    return python_for(case, version())
